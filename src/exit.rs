//! Process exit codes, the same for every command.

/// Nothing at or above `--fail-on`.
pub const OK: i32 = 0;
/// Findings at or above `--fail-on`.
pub const FINDINGS: i32 = 1;
/// Usage error or unusable input (unknown transport, missing file, not an image, unreachable daemon).
pub const USAGE_OR_INPUT: i32 = 2;
