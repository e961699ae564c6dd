//! `throughput isal|zlibrs FILE.gz`: decodes FILE to nowhere, reporting bytes and time (run
//! under `/usr/bin/time` for CPU).
use std::io::Read;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let f = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(&args[2]).unwrap());
    let mut r: Box<dyn Read> = match args[1].as_str() {
        "isal" => Box::new(isal::read::GzipDecoder::new(f)),
        "zlibrs" => Box::new(flate2::bufread::MultiGzDecoder::new(f)),
        _ => panic!(),
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    let t = std::time::Instant::now();
    loop {
        let k = r.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        n += k as u64;
    }
    println!("{} bytes in {:?}", n, t.elapsed());
}
