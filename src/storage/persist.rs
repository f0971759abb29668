//! PLACEHOLDER (replaced by its owner before the first commit lands).
