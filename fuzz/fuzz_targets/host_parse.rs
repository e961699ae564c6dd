//! nvidia-smi output (`-q -x` XML, `-q` text, `--query-gpu` CSV, `-L`) and the host files
//! the doctor reads (/proc/version, /proc/driver/nvidia/gpus/*/information, modules,
//! modprobe blacklists, `ls -l /dev`, `id`, nvcc, cuda version files, dmesg Xid lines).
#![no_main]
use gpulint::host::parse::{self, smi};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let t = String::from_utf8_lossy(data);
    let t = &*t;
    let _ = smi::parse_xml(t);
    let _ = smi::parse_q_text(t);
    let _ = smi::text_tree(t);
    let _ = smi::parse_query_csv(t);
    let _ = smi::parse_list(t);
    let _ = smi::error_lines(t);
    let _ = parse::xml::parse(t);
    let _ = parse::parse_proc_version(t);
    let _ = parse::parse_proc_gpu_information(t);
    let _ = parse::parse_modules(t);
    let _ = parse::parse_modprobe_blacklist(t);
    let _ = parse::parse_cmdline_blacklist(t);
    let _ = parse::parse_ls_l(t);
    let _ = parse::parse_id(t);
    let _ = parse::parse_proc_status(t);
    let _ = parse::parse_nvcc_version(t);
    let _ = parse::cuda_dir_version(t);
    let _ = parse::parse_cuda_version_json(t);
    let _ = parse::parse_cuda_version_txt(t);
    let _ = parse::toolkit_version(t);
    let _ = parse::xid::xids(t);
    let _ = parse::topo::parse_topo_matrix(t);
    for line in t.lines() {
        if let Some(v) = gpulint::host::shell_env::ld_assignment(line) {
            let _ = gpulint::host::shell_env::value_dirs(&v, Some("/home/u"), None);
        }
    }
});
