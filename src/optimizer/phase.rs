//! The optimizer's named phases: what [`super::optimize`] runs, in
//! pipeline order, the set of phases an [`OptimizerOptions`] switches off,
//! and the time each took.
//!
//! A phase is named the way `SET disabled_optimizers` spells it
//! (`normalize`, `saturate`, `mask`, `symmetry`, `semijoin`, `eliminate`,
//! `distribute`, `trivial`, `cse`, `physical`, `factorize`, `dense`,
//! `fuse`);
//! [`Phase::from_str`] parses a name and rejects an unknown one with the
//! closest known name ("did you mean"), and [`PhaseSet`] parses and
//! prints a comma-separated list of them. New phases are added as
//! variants at their place in [`Phase::ALL`]; the driver in
//! [`super::optimize`] runs them in that order.
//!
//! [`OptimizerOptions`]: super::OptimizerOptions

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};

/// One phase of the optimizer (see the documentation of
/// [`super::optimize`] for what each does and what disabling it means).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Unique bound names, flattened products, sums lifted out of products
    /// ([`super::logical::normalize`]).
    Normalize,
    /// Algebraic rewrites by equality saturation (SPORES), kept when the
    /// rest of the optimizer estimates them cheaper ([`super::saturate`]).
    Saturate,
    /// Nested aggregates under maps computed only where an annihilating
    /// stored input of the map around them is stored ([`super::mask`]).
    Mask,
    /// Sums over interchangeable variables of a symmetric input counted
    /// once per set of values and multiplied by the number of orders
    /// ([`super::symmetry`]).
    Symmetry,
    /// Stored inputs of products shrunk by their one-variable factors
    /// ([`super::reduce`]).
    Semijoin,
    /// The search over elimination orders, which writes the chosen
    /// aggregation steps as intermediate queries
    /// ([`super::logical::eliminate`]).
    Eliminate,
    /// Products of sums planned distributed into sums of products when
    /// that is cheaper; runs within `eliminate`, which it needs.
    Distribute,
    /// Searches skipped where the plan they start from is estimated to
    /// run in less time than they would take
    /// ([`super::logical::kept_as_written`]): a sum whose loop nest as
    /// written costs less than the elimination search's first round, or
    /// over sparse inputs less than a million units
    /// ([`super::logical::SMALL_NEST`], its loops guarded), is
    /// kept as written ([`super::logical::eliminate`]), and a loop nest
    /// whose greedy order costs less than the exact order search keeps it
    /// ([`super::physical`]); the exact elimination search's budget weighs
    /// the greedy plan the same way ([`super::logical::exact_budget`]).
    /// Runs within `eliminate` and `physical`, and its time is theirs.
    Trivial,
    /// Steps equal up to renaming their variables computed once
    /// ([`super::logical::cse`]).
    Cse,
    /// Loop orders and output formats chosen by estimated cost
    /// ([`super::physical`]).
    Physical,
    /// Loop nests of sums of products made trees whose independent
    /// subtrees' sums multiply ([`crate::exec::plan::PhysicalQuery::factorize`]);
    /// runs within `physical`, which it needs.
    Factorize,
    /// Matrix products of operands that fill most of their cells run as
    /// one dense kernel when estimated cheaper than their loops
    /// ([`crate::exec::plan::Contraction`]); runs within `physical`,
    /// which it needs.
    Dense,
    /// Consecutive sparse-driven queries over the same driver run as one
    /// pass over its entries, a result that only the next of them reads
    /// row by row kept row-local ([`super::fuse`]); needs `physical`.
    Fuse,
}

impl Phase {
    /// Every phase, in the order the optimizer runs them.
    pub const ALL: [Phase; 13] = [
        Phase::Normalize,
        Phase::Saturate,
        Phase::Mask,
        Phase::Symmetry,
        Phase::Semijoin,
        Phase::Eliminate,
        Phase::Distribute,
        Phase::Trivial,
        Phase::Cse,
        Phase::Physical,
        Phase::Factorize,
        Phase::Dense,
        Phase::Fuse,
    ];

    /// The name `SET disabled_optimizers` takes.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Normalize => "normalize",
            Phase::Saturate => "saturate",
            Phase::Mask => "mask",
            Phase::Semijoin => "semijoin",
            Phase::Symmetry => "symmetry",
            Phase::Eliminate => "eliminate",
            Phase::Distribute => "distribute",
            Phase::Trivial => "trivial",
            Phase::Cse => "cse",
            Phase::Physical => "physical",
            Phase::Factorize => "factorize",
            Phase::Dense => "dense",
            Phase::Fuse => "fuse",
        }
    }

    /// The bit of the phase in a [`PhaseSet`].
    fn bit(self) -> u16 {
        1 << self as u16
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Phase {
    type Err = Error;

    /// The phase of a name (case-insensitive, surrounding blanks ignored).
    ///
    /// Errors: an unknown name, as [`Error::UnknownName`] with the closest
    /// phase name when one is close enough to be a typo.
    fn from_str(name: &str) -> Result<Phase> {
        let name = name.trim();
        Phase::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| Error::unknown("Optimizer phase", name, Phase::ALL.map(Phase::name)))
    }
}

/// A set of phases (the disabled ones, in [`super::OptimizerOptions`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PhaseSet(u16);

impl PhaseSet {
    /// No phase.
    pub const EMPTY: PhaseSet = PhaseSet(0);

    /// Every phase.
    pub fn all() -> PhaseSet {
        Phase::ALL.into_iter().collect()
    }

    /// Whether `phase` is in the set.
    pub fn contains(self, phase: Phase) -> bool {
        self.0 & phase.bit() != 0
    }

    /// The set with `phase` added.
    pub fn with(self, phase: Phase) -> PhaseSet {
        PhaseSet(self.0 | phase.bit())
    }

    /// The set without `phase`.
    pub fn without(self, phase: Phase) -> PhaseSet {
        PhaseSet(self.0 & !phase.bit())
    }

    /// Whether the set has no phase.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The set as bits, one per phase (for storing it in an atomic).
    pub fn bits(self) -> u16 {
        self.0
    }

    /// The set of `bits` (from [`PhaseSet::bits`]); bits that name no
    /// phase are dropped.
    pub fn from_bits(bits: u16) -> PhaseSet {
        PhaseSet(bits & PhaseSet::all().0)
    }

    /// The phases of the set, in pipeline order.
    pub fn iter(self) -> impl Iterator<Item = Phase> {
        Phase::ALL.into_iter().filter(move |p| self.contains(*p))
    }
}

impl FromIterator<Phase> for PhaseSet {
    fn from_iter<I: IntoIterator<Item = Phase>>(phases: I) -> PhaseSet {
        phases.into_iter().fold(PhaseSet::EMPTY, PhaseSet::with)
    }
}

impl fmt::Display for PhaseSet {
    /// The names, in pipeline order, separated by `, ` (empty for no
    /// phase): what [`PhaseSet::from_str`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, phase) in self.iter().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            f.write_str(phase.name())?;
        }
        Ok(())
    }
}

impl FromStr for PhaseSet {
    type Err = Error;

    /// The phases of a comma-separated list of names (`'semijoin,
    /// distribute'`); an empty or blank list is the empty set.
    ///
    /// Errors: an unknown name (see [`Phase::from_str`]).
    fn from_str(list: &str) -> Result<PhaseSet> {
        list.split(',')
            .filter(|name| !name.trim().is_empty())
            .map(Phase::from_str)
            .collect()
    }
}

/// How long one phase of one optimization took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseTime {
    /// The phase.
    pub phase: Phase,
    /// Its time; zero when it was skipped.
    pub time: Duration,
    /// Whether it was skipped: disabled, or not run because a phase it
    /// needs was (see [`super::optimize`]).
    pub skipped: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for phase in Phase::ALL {
            assert_eq!(phase.name().parse::<Phase>().ok(), Some(phase));
            assert_eq!(phase.to_string(), phase.name());
        }
        let set = PhaseSet::EMPTY.with(Phase::Semijoin).with(Phase::Cse);
        assert_eq!(set.to_string(), "semijoin, cse");
        assert_eq!(set.to_string().parse::<PhaseSet>().ok(), Some(set));
        assert_eq!("".parse::<PhaseSet>().ok(), Some(PhaseSet::EMPTY));
        assert_eq!(
            PhaseSet::all().to_string().parse::<PhaseSet>().ok(),
            Some(PhaseSet::all())
        );
    }

    #[test]
    fn unknown_names_suggest_the_closest() {
        let error = "semijion".parse::<Phase>().map(|_| ()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Optimizer phase 'semijion' does not exist (did you mean 'semijoin'?)"
        );
        let error = "normalize, parallel"
            .parse::<PhaseSet>()
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "Optimizer phase 'parallel' does not exist"
        );
    }
}
