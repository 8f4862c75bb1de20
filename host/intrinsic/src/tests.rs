//! Unit tests of the intrinsics: the workflow's rules, the property over
//! random command sequences, the generated schemas and the committed
//! documents (the contract test).

mod contract;
mod props;
mod rules;
