//! A plain WASI command (a component exporting `wasi:cli/run`), not a
//! tiny-harness plugin: it targets another world and exports neither
//! `register` nor `call`. The host's tests load it to check that the host
//! refuses a component that does not implement the plugin world.

fn main() {
    println!("I am a command, not a tiny-harness plugin");
}
