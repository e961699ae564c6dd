fn main() {
    std::process::exit(gpulint::run(std::env::args_os().collect()));
}
