//! Unit tests of the einsum front-end: parsing, positions in errors, and
//! the text form of the IR.
