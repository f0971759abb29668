use einsql::io::{NoProgress, ReadOptions, csv};
#[test]
fn timing() {
    let p = std::path::Path::new("/tmp/h6/wide.csv");
    let t = std::time::Instant::now();
    let r = csv::read(
        p,
        &ReadOptions {
            header: Some(false),
            ..Default::default()
        },
        &NoProgress,
    );
    eprintln!("wide: {:?} {:?}", t.elapsed(), r.map(|t| t.nnz()));
}
