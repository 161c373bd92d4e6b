fn main() {
    std::process::exit(codemode::cli::main());
}
