//! CLI cases as data (`tests/cmd/*.toml`, trycmd): each names the arguments, the expected
//! exit status and, in `.stdout` / `.stderr` files beside it, the exact output. Update with
//! `TRYCMD=overwrite cargo test --test integration cmd_cases` and review the diff.

#[test]
fn cli_cases() {
    trycmd::TestCases::new()
        .register_bin(
            "gpulint",
            std::path::Path::new(env!("CARGO_BIN_EXE_gpulint")),
        )
        .case("tests/cmd/*.toml");
}
