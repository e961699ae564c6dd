//! Sweeps: every cut position and 2,000 random one-byte corruptions of 1- and 2-member
//! streams, input delivered in reads of 1 to 100 bytes, and a valid stream of many empty
//! stored blocks, through isal-rs and flate2 (zlib-rs).
use std::io::{Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};

struct Chunky<'a> {
    d: &'a [u8],
    max: usize,
}
impl Read for Chunky<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.max).min(self.d.len());
        buf[..n].copy_from_slice(&self.d[..n]);
        self.d = &self.d[n..];
        Ok(n)
    }
}
fn rng(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}
fn data(n: usize) -> Vec<u8> {
    let mut s = 7u64;
    let mut v = vec![];
    while v.len() < n {
        if rng(&mut s) % 2 == 0 {
            for _ in 0..500 {
                v.push(b'a' + (rng(&mut s) % 6) as u8)
            }
        } else {
            for _ in 0..300 {
                v.push(rng(&mut s) as u8)
            }
        }
    }
    v.truncate(n);
    v
}
fn gz(d: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(d).unwrap();
    e.finish().unwrap()
}
#[derive(Debug, PartialEq)]
enum R {
    Ok(bool),
    Err(String),
    Panic,
}
fn dec<Rd: Read>(isal_: bool, r: Rd, exp: &[u8]) -> R {
    let res = catch_unwind(AssertUnwindSafe(|| {
        let mut out = vec![];
        let res = if isal_ {
            isal::read::GzipDecoder::new(std::io::BufReader::new(r)).read_to_end(&mut out)
        } else {
            flate2::bufread::MultiGzDecoder::new(std::io::BufReader::new(r)).read_to_end(&mut out)
        };
        match res {
            Ok(_) => R::Ok(out == exp),
            Err(e) => R::Err(e.to_string()),
        }
    }));
    res.unwrap_or(R::Panic)
}
fn main() {
    std::panic::set_hook(Box::new(|_| {}));
    let d = data(300_000);
    let g = gz(&d);
    let two = [g.clone(), g.clone()].concat();
    let dd = [d.clone(), d.clone()].concat();
    // 1. valid input through a reader returning at most `max` bytes per read()
    for max in [1usize, 2, 7, 10, 64, 100, 1000, 4096, 16383, 1 << 20] {
        let a = dec(true, Chunky { d: &two, max }, &dd);
        let b = dec(false, Chunky { d: &two, max }, &dd);
        println!("valid 2-member stream, inner reads <= {max:>7} B: isal={a:?} flate2={b:?}");
    }
    // same but BufReader capacity 1 MiB (like main.rs) over Chunky
    for max in [1usize, 10, 1000] {
        let mut out = vec![];
        let r = isal::read::GzipDecoder::new(std::io::BufReader::with_capacity(
            1 << 20,
            Chunky { d: &two, max },
        ))
        .read_to_end(&mut out)
        .map(|_| out == dd)
        .map_err(|e| e.to_string());
        println!("valid, BufReader(1MiB) over chunky {max}: isal={r:?}");
    }
    // 2. truncation sweep: every cut in last 200 bytes + every 97th position; 2-member too
    for (name, src) in [("1-member", &g), ("2-member", &two)] {
        let mut bad = [0usize; 2];
        let mut panics = [0usize; 2];
        let mut cuts = 0;
        let total = src.len();
        let mut positions: Vec<usize> = (0..total).step_by(97).collect();
        positions.extend(total.saturating_sub(200)..total);
        positions.extend(0..40);
        for cut in positions {
            if name == "2-member" && cut == g.len() {
                continue;
            } // boundary = valid 1-member stream
            cuts += 1;
            for (i, isal_) in [true, false].into_iter().enumerate() {
                match dec(isal_, &src[..cut], &[]) {
                    R::Ok(_) => {
                        bad[i] += 1;
                        if bad[i] < 4 {
                            println!("  SILENT OK: {name} cut={cut}/{total} isal={isal_}")
                        }
                    }
                    R::Panic => panics[i] += 1,
                    _ => {}
                }
            }
        }
        println!("truncation sweep {name}: {cuts} cuts; silent-Ok isal={} flate2={}; panics isal={} flate2={}", bad[0], bad[1], panics[0], panics[1]);
    }
    // truncation sweep via chunky(1) reader on last 40 cuts
    let mut bad = [0; 2];
    for cut in g.len() - 40..g.len() {
        for (i, isal_) in [true, false].into_iter().enumerate() {
            if let R::Ok(_) = dec(
                isal_,
                Chunky {
                    d: &g[..cut],
                    max: 3,
                },
                &[],
            ) {
                bad[i] += 1
            }
        }
    }
    println!(
        "truncation sweep chunky(3) last 40 cuts: silent-Ok isal={} flate2={}",
        bad[0], bad[1]
    );
    // 3. random corruption sweep (1 byte xor) - count silent OK with WRONG output and panics
    let mut s = 42u64;
    let mut st = [[0usize; 4]; 2];
    for _ in 0..2000 {
        let mut c = g.clone();
        let p = (rng(&mut s) as usize) % c.len();
        let x = (rng(&mut s) % 255 + 1) as u8;
        c[p] ^= x;
        for (i, isal_) in [true, false].into_iter().enumerate() {
            match dec(isal_, &c[..], &d) {
                R::Ok(true) => st[i][0] += 1,
                R::Ok(false) => st[i][1] += 1,
                R::Err(_) => st[i][2] += 1,
                R::Panic => st[i][3] += 1,
            }
        }
    }
    println!("2000 random 1-byte corruptions [ok-same, OK-WRONG-OUTPUT, err, panic]: isal={:?} flate2={:?}", st[0], st[1]);
    // 4. valid gzip with many empty stored blocks (legal deflate)
    for nblocks in [1usize, 3000, 4000, 100_000] {
        let mut m = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
        for _ in 0..nblocks {
            m.extend_from_slice(&[0x00, 0x00, 0x00, 0xff, 0xff]);
        }
        m.extend_from_slice(&[0x01, 3, 0, 0xfc, 0xff, b'a', b'b', b'c']);
        let mut c = flate2::Crc::new();
        c.update(b"abc");
        m.extend_from_slice(&c.sum().to_le_bytes());
        m.extend_from_slice(&3u32.to_le_bytes());
        println!(
            "valid: {nblocks} empty stored blocks ({} B): isal={:?} flate2={:?}  gzip -t: {}",
            m.len(),
            dec(true, &m[..], b"abc"),
            dec(false, &m[..], b"abc"),
            {
                let p = std::env::temp_dir().join("gpulint-decoder-eval-empty-blocks.gz");
                std::fs::write(&p, &m).unwrap();
                std::process::Command::new("gzip")
                    .arg("-t")
                    .arg(&p)
                    .status()
                    .unwrap()
                    .success()
            }
        );
    }
}
