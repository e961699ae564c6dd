//! Work spread over threads: each worker takes the next index until none is left, and the
//! results come back by index, so what the caller builds does not depend on which thread did
//! what.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `f(0)`..`f(n - 1)` on up to `jobs` threads. A worker that panicked leaves the indices it
/// had taken `None`: the caller says what that means.
pub(crate) fn map_indexed<R: Send>(
    n: usize,
    jobs: usize,
    f: impl Fn(usize) -> R + Sync,
) -> Vec<Option<R>> {
    let next = AtomicUsize::new(0);
    let done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..jobs.clamp(1, n.max(1)))
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            return out;
                        }
                        out.push((i, f(i)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .collect()
    });
    let mut results: Vec<Option<R>> = (0..n).map(|_| None).collect();
    for (i, r) in done {
        results[i] = Some(r);
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_once_in_order_whatever_the_thread_count() {
        for jobs in [0, 1, 2, 7, 100] {
            let got = map_indexed(50, jobs, |i| i * i);
            let want: Vec<Option<usize>> = (0..50).map(|i| Some(i * i)).collect();
            assert_eq!(got, want, "{jobs} jobs");
        }
        assert!(map_indexed(0, 4, |i| i).is_empty());
    }

    #[test]
    fn a_panicking_worker_leaves_its_indices_empty() {
        let got = map_indexed(10, 1, |i| {
            assert!(i != 3, "index 3 fails");
            i
        });
        // One worker: it had taken 0..=3 when it panicked.
        assert!(got.iter().all(Option::is_none), "{got:?}");
        let got = map_indexed(10, 3, |i| {
            assert!(i != 3, "index 3 fails");
            i
        });
        assert!(got[3].is_none());
        assert!(got.iter().flatten().all(|&i| i != 3));
    }
}
