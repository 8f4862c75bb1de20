//! Unit tests of grants: exec grants resolved on a fake `PATH` of
//! temporary directories (`exec`), their argument patterns (`args`),
//! net grants against URLs parsed by the `url` crate as callers do (`net`),
//! and one plugin's grants together, checked as each is added (`set`).

mod args;
mod exec;
mod net;
mod set;
