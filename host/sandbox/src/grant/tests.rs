//! Unit tests of grants: exec grants resolved on a fake `PATH` of
//! temporary directories (`exec`), their argument patterns (`args`), and
//! net grants against URLs parsed by the `url` crate as callers do (`net`).

mod args;
mod exec;
mod net;
