//! gzip decoders on crafted inputs: isal-rs against flate2 (zlib-rs), each read to its end in
//! a thread of its own with a timeout, panics caught. `semantics move` shows the decoder read
//! past its buffer once moved after its first read.
use std::io::{BufReader, Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// A file in this program's scratch directory (created on first use).
fn scratch(name: &str) -> String {
    let dir = std::env::temp_dir().join("gpulint-decoder-eval");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).to_string_lossy().into_owned()
}

fn mixed(n: usize) -> Vec<u8> {
    let words = [
        "layer",
        "sha256",
        "tar",
        "usr/lib/",
        "python3.11",
        "torch",
        "\n",
        " ",
        "0000",
        "{\"a\":1}",
    ];
    let mut s = 0x1234_5678_9abc_def0u64;
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        match rng(&mut s) % 4 {
            0 | 1 => {
                for _ in 0..200 {
                    v.extend_from_slice(words[(rng(&mut s) % 10) as usize].as_bytes())
                }
            }
            2 => {
                for _ in 0..1000 {
                    v.push(rng(&mut s) as u8)
                }
            }
            _ => v.extend(std::iter::repeat(0u8).take((rng(&mut s) % 5000) as usize)),
        }
    }
    v.truncate(n);
    v
}

fn gz_flate2(d: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(d).unwrap();
    e.finish().unwrap()
}
fn gz_cli(d: &[u8], path: &str) -> Vec<u8> {
    std::fs::write(path, d).unwrap();
    let o = Command::new("gzip")
        .args(["-c", "-n", path])
        .output()
        .unwrap();
    assert!(o.status.success());
    o.stdout
}
fn raw_deflate(d: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(d).unwrap();
    e.finish().unwrap()
}
fn crc32(d: &[u8]) -> u32 {
    let mut c = flate2::Crc::new();
    c.update(d);
    c.sum()
}

/// hand-built member with given flags
fn handbuilt(
    d: &[u8],
    extra: Option<&[u8]>,
    name: Option<&[u8]>,
    comment: Option<&[u8]>,
    hcrc: Option<bool /*correct?*/>,
) -> Vec<u8> {
    let mut flg = 0u8;
    if hcrc.is_some() {
        flg |= 2
    }
    if extra.is_some() {
        flg |= 4
    }
    if name.is_some() {
        flg |= 8
    }
    if comment.is_some() {
        flg |= 16
    }
    let mut h = vec![0x1f, 0x8b, 8, flg, 0, 0, 0, 0, 0, 3];
    if let Some(x) = extra {
        h.extend_from_slice(&(x.len() as u16).to_le_bytes());
        h.extend_from_slice(x);
    }
    if let Some(x) = name {
        h.extend_from_slice(x);
        h.push(0);
    }
    if let Some(x) = comment {
        h.extend_from_slice(x);
        h.push(0);
    }
    if let Some(ok) = hcrc {
        let mut c = (crc32(&h) & 0xffff) as u16;
        if !ok {
            c ^= 0x5555;
        }
        h.extend_from_slice(&c.to_le_bytes());
    }
    h.extend_from_slice(&raw_deflate(d));
    h.extend_from_slice(&crc32(d).to_le_bytes());
    h.extend_from_slice(&(d.len() as u32).to_le_bytes());
    h
}

#[derive(Debug)]
enum Res {
    Ok(usize, Option<bool>),
    Err(std::io::ErrorKind, String, usize),
    Panic(String),
    Timeout,
}

fn fmt(r: &Res) -> String {
    match r {
        Res::Ok(n, m) => format!(
            "Ok({n}){}",
            match m {
                Some(true) => " ==expected",
                Some(false) => " !!MISMATCH",
                None => "",
            }
        ),
        Res::Err(k, m, n) => format!(
            "Err({k:?}: {m}) [{n} bytes before err]",
            m = m.chars().take(90).collect::<String>()
        ),
        Res::Panic(m) => format!("PANIC {m}"),
        Res::Timeout => "TIMEOUT (>20s, hang?)".into(),
    }
}

fn run(input: Vec<u8>, expect: Option<Vec<u8>>, isal: bool) -> Res {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut out = Vec::new();
            // read in chunks to be able to report how much came before an error
            let res: std::io::Result<usize> = if isal {
                let mut d = isal::read::GzipDecoder::new(BufReader::new(&input[..]));
                d.read_to_end(&mut out)
            } else {
                let mut d = flate2::bufread::MultiGzDecoder::new(&input[..]);
                d.read_to_end(&mut out)
            };
            match res {
                Ok(n) => Res::Ok(n, expect.as_ref().map(|e| *e == out)),
                Err(e) => Res::Err(e.kind(), e.to_string(), out.len()),
            }
        }));
        let _ = tx.send(match r {
            Ok(x) => x,
            Err(p) => Res::Panic(
                p.downcast_ref::<String>()
                    .cloned()
                    .or(p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default(),
            ),
        });
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or(Res::Timeout)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(|s| s.as_str()) == Some("move") {
        return move_test();
    }
    std::panic::set_hook(Box::new(|_| {}));
    let a = mixed(5 << 20);
    let b = mixed(1 << 20)
        .iter()
        .map(|x| x.wrapping_add(7))
        .collect::<Vec<u8>>();
    let a_gz = gz_flate2(&a);
    let a_cli = gz_cli(&a, &scratch("a"));
    let b_cli = gz_cli(&b, &scratch("b"));
    let ab: Vec<u8> = [a.clone(), b.clone()].concat();
    let n = a_gz.len();
    let mut cases: Vec<(String, Vec<u8>, Option<Vec<u8>>)> = vec![];
    cases.push((
        "1 single member flate2 5MiB".into(),
        a_gz.clone(),
        Some(a.clone()),
    ));
    cases.push((
        "1b single member gzip CLI 5MiB".into(),
        a_cli.clone(),
        Some(a.clone()),
    ));
    cases.push((
        "2 two members cat a.gz b.gz (CLI)".into(),
        [a_cli.clone(), b_cli.clone()].concat(),
        Some(ab.clone()),
    ));
    cases.push((
        "2b two members flate2+CLI".into(),
        [a_gz.clone(), b_cli.clone()].concat(),
        Some(ab.clone()),
    ));
    let small = gz_flate2(b"hello\n");
    cases.push((
        "2c 3 members incl. tiny + empty-payload member".into(),
        [small.clone(), gz_flate2(b""), small.clone()].concat(),
        Some(b"hello\nhello\n".to_vec()),
    ));
    cases.push(("3a truncated at 50%".into(), a_gz[..n / 2].to_vec(), None));
    cases.push((
        "3b truncated just before 8-byte trailer".into(),
        a_gz[..n - 8].to_vec(),
        None,
    ));
    cases.push((
        "3c truncated inside trailer (-4)".into(),
        a_gz[..n - 4].to_vec(),
        None,
    ));
    cases.push((
        "3d truncated inside trailer (-1)".into(),
        a_gz[..n - 1].to_vec(),
        None,
    ));
    cases.push((
        "3e 2nd member truncated at 50%".into(),
        [a_gz.clone(), b_cli[..b_cli.len() / 2].to_vec()].concat(),
        None,
    ));
    cases.push((
        "3f 2nd member: only 5 header bytes".into(),
        [a_gz.clone(), b_cli[..5].to_vec()].concat(),
        None,
    ));
    let mut c = a_gz.clone();
    c[n - 8] ^= 0x01;
    cases.push(("4a CRC32 byte flipped".into(), c, None));
    let mut c = a_gz.clone();
    c[n - 4] ^= 0x01;
    cases.push(("4b ISIZE byte flipped".into(), c, None));
    let mut c = a_gz.clone();
    c[n / 2] ^= 0xff;
    cases.push(("5 flipped byte mid-deflate".into(), c, None));
    let mut c = a_gz.clone();
    c[n / 2] ^= 0x01;
    cases.push(("5b single bit flip mid-deflate".into(), c, None));
    cases.push((
        "6a +100 zero bytes trailing".into(),
        [a_gz.clone(), vec![0u8; 100]].concat(),
        None,
    ));
    let mut s = 99u64;
    let garbage: Vec<u8> = (0..100).map(|_| rng(&mut s) as u8).collect();
    cases.push((
        "6b +100 random bytes trailing".into(),
        [a_gz.clone(), garbage].concat(),
        None,
    ));
    cases.push((
        "6c +1 zero byte trailing".into(),
        [a_gz.clone(), vec![0u8]].concat(),
        None,
    ));
    cases.push((
        "6d +2 bytes 1f 8b trailing".into(),
        [a_gz.clone(), vec![0x1f, 0x8b]].concat(),
        None,
    ));
    cases.push(("7a empty input".into(), vec![], None));
    cases.push(("7b 10-byte header only".into(), a_gz[..10].to_vec(), None));
    cases.push((
        "7c non-gzip (plain tar bytes)".into(),
        a[..4096].to_vec(),
        None,
    ));
    // python FNAME
    std::fs::write(scratch("small"), &a[..200_000]).unwrap();
    let script = format!("import gzip;d=open('{}','rb').read();f=gzip.GzipFile(filename='layer.tar',mode='wb',fileobj=open('{}','wb'),mtime=0);f.write(d);f.close()", scratch("small"), scratch("py.gz"));
    let py = Command::new("python3")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(py.success());
    cases.push((
        "8a python gzip FNAME".into(),
        std::fs::read(scratch("py.gz")).unwrap(),
        Some(a[..200_000].to_vec()),
    ));
    let d = &a[..200_000];
    cases.push((
        "8b hand FEXTRA+FNAME+FCOMMENT+FHCRC(ok)".into(),
        handbuilt(
            d,
            Some(b"AB\x04\x00xyzw"),
            Some(b"layer.tar"),
            Some(b"a comment"),
            Some(true),
        ),
        Some(d.to_vec()),
    ));
    cases.push((
        "8c hand FHCRC only (ok)".into(),
        handbuilt(d, None, None, None, Some(true)),
        Some(d.to_vec()),
    ));
    cases.push((
        "8d hand FHCRC WRONG".into(),
        handbuilt(d, None, None, None, Some(false)),
        None,
    ));
    cases.push((
        "8e hand FEXTRA 60000 bytes (legal)".into(),
        handbuilt(d, Some(&vec![b'x'; 60000]), None, None, None),
        Some(d.to_vec()),
    ));
    cases.push((
        "8f hand FNAME 100000 bytes (legal)".into(),
        handbuilt(d, None, Some(&vec![b'n'; 100000]), None, None),
        Some(d.to_vec()),
    ));
    let mut h = handbuilt(d, None, None, None, None);
    h[3] = 0xe0;
    cases.push(("8g reserved FLG bits set".into(), h, None));
    let mut h = handbuilt(d, None, None, None, None);
    h[2] = 7;
    cases.push(("8h CM != 8".into(), h, None));
    // valid stream with many empty sync-flush blocks (no output for long stretches)
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for ch in [b"a", b"b", b"c"] {
        e.write_all(ch).unwrap();
        for _ in 0..8000 {
            e.flush().unwrap();
        }
    }
    let sf = e.finish().unwrap();
    cases.push((
        format!("8i valid: 24000 empty sync-flush blocks ({} B)", sf.len()),
        sf,
        Some(b"abc".to_vec()),
    ));
    // stored (level 0) big
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    e.write_all(&a).unwrap();
    cases.push((
        "8j stored blocks (level 0)".into(),
        e.finish().unwrap(),
        Some(a.clone()),
    ));

    println!("| # input | isal::read::GzipDecoder | flate2::bufread::MultiGzDecoder (zlib-rs) |\n|---|---|---|");
    for (name, input, exp) in cases {
        let r1 = run(input.clone(), exp.clone(), true);
        let r2 = run(input, exp, false);
        println!("| {name} | {} | {} |", fmt(&r1), fmt(&r2));
    }
}

/// Decoder::in_buf is an inline array and next_in points into it: moving the decoder after
/// the first read leaves next_in dangling.
fn move_test() {
    let a = mixed(5 << 20);
    let a_gz = gz_flate2(&a);
    let mut out = vec![0u8; 1 << 20];
    let mut d = isal::read::GzipDecoder::new(BufReader::new(&a_gz[..]));
    let k = d.read(&mut out[..4096]).unwrap();
    let mut got = out[..k].to_vec();
    // move it: onto the heap
    let mut boxed = Box::new(d);
    let r = boxed.read_to_end(&mut got);
    println!(
        "after move: {:?}, equal={}",
        r.as_ref().map_err(|e| e.to_string()),
        got == a
    );
}
