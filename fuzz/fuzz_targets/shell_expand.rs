//! The shell reader (`RUN` scripts, shell files: quoting, heredocs, assignments) and
//! variable expansion (`${V%%pat}`, `${V//a/b}`, `${U:-…}` nesting), BuildKit and compose
//! flavours. The first line of the input is the value of `$V`; the rest is the script.
#![no_main]
use gpulint::runconfig::shell::{self, Var, Vars};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (value, script) = text.split_once('\n').unwrap_or(("", &text));
    let mut vars = Vars::new();
    vars.insert("V".into(), Var::Set(value.to_string()));
    vars.insert("U".into(), Var::Unknown);
    let _ = shell::try_expand_word(script, &vars, '\\');
    let _ = shell::try_expand_word(script, &vars, '`');
    let _ = shell::try_expand_plain(script, &vars);
    let _ = shell::glob_match(value, script);
    let mut v = vars.clone();
    for c in shell::try_parse_script(script, &mut v).0 {
        let _ = c.argv();
    }
});
