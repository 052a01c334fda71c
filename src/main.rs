//! The `dream` command line.

fn main() {
    println!("dream");
}
