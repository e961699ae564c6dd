//! The bounds of variable expansion, shared by every interpolation engine: Dockerfile words
//! and ENV / ARG values, shell scripts (RUN, `docker run` scripts, Markdown and CI steps),
//! compose `${…}` and bake `${…}`. One word (or value) expands to at most [`MAX_WORD`] bytes,
//! `${…}` nests at most [`MAX_NESTING`] deep, and everything one input file expands to draws
//! from one [`ExpansionBudget`] of [`MAX_FILE`] bytes: a word is bounded, but a chain of
//! variables that each double the last (`V2=${V1}${V1}`), or a short reference repeated, grows
//! exponentially or by a MiB per a few input bytes without a bound on the sum. Past a bound the
//! engine keeps the text as written (unresolved) and reports the [`ExpandLimit`] (GL100).

/// The most bytes one word or value may expand to.
pub const MAX_WORD: usize = 1 << 20;
/// The deepest `${A:-${B:-…}}` nesting expanded.
pub const MAX_NESTING: usize = 64;
/// The most bytes the expansions of one input file may produce together.
pub const MAX_FILE: usize = 32 << 20;
/// The most shell words the scripts of one input file may yield. A word costs about 100 to
/// 250 bytes of memory as the rules see it (its text, as written, position), whatever its
/// length: `a a a …` costs 50 to 130 bytes per input byte without a bound.
pub const MAX_WORDS: usize = 1 << 20;
/// The most work one glob trim (`${V#*x}`, `${V%%x*}`) may take: value bytes × pattern bytes
/// (the trim is linear in the value for a given pattern, so a 1 MiB value takes any pattern of
/// up to 16 bytes).
pub const MAX_GLOB_TRIM: usize = 16 << 20;

/// A bound of variable expansion that a word went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpandLimit {
    /// The expansion would exceed [`MAX_WORD`] bytes.
    Size,
    /// `${…}` nested deeper than [`MAX_NESTING`].
    Depth,
    /// A glob pattern trim whose value × pattern length exceeds [`MAX_GLOB_TRIM`].
    Trim,
    /// The file's expansions together would exceed [`MAX_FILE`] bytes.
    Total,
    /// The file's scripts have more than [`MAX_WORDS`] words: the rest is not read.
    Words,
}

impl std::fmt::Display for ExpandLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpandLimit::Size => write!(
                f,
                "variable expansion exceeds {} MiB; left unexpanded",
                MAX_WORD >> 20
            ),
            ExpandLimit::Depth => write!(
                f,
                "variable expansions nested more than {MAX_NESTING} deep; left unexpanded"
            ),
            ExpandLimit::Trim => write!(
                f,
                "pattern trim of a long variable by a long pattern (over {} Mi value x pattern \
                 bytes); left unexpanded",
                MAX_GLOB_TRIM >> 20
            ),
            ExpandLimit::Total => write!(
                f,
                "variable expansions of this file exceed {} MiB in all; this and later ones \
                 left unexpanded",
                MAX_FILE >> 20
            ),
            ExpandLimit::Words => write!(
                f,
                "more than {MAX_WORDS} shell words in this file; the rest is not read"
            ),
        }
    }
}

/// What is left of one input file's expansion allowance ([`MAX_FILE`] bytes). Each engine
/// charges the bytes of every word or value it expanded; once a charge does not fit, the
/// budget is spent and later expansions are refused too (never a partial word).
#[derive(Debug, Clone)]
pub struct ExpansionBudget {
    left: usize,
    /// Shell words the file may still yield ([`MAX_WORDS`]).
    words_left: usize,
    /// The file-wide limits reported already: a file reports each once, where it ran out.
    reported: Vec<ExpandLimit>,
}

impl Default for ExpansionBudget {
    fn default() -> Self {
        ExpansionBudget::per_file()
    }
}

impl ExpansionBudget {
    /// The budget of one input file.
    pub fn per_file() -> Self {
        ExpansionBudget::with_bytes(MAX_FILE)
    }

    /// A budget of `bytes` (tests use small ones).
    pub fn with_bytes(bytes: usize) -> Self {
        ExpansionBudget {
            left: bytes,
            words_left: MAX_WORDS,
            reported: Vec::new(),
        }
    }

    /// A budget of `bytes` and `words` (tests use small ones).
    pub fn with_words(bytes: usize, words: usize) -> Self {
        ExpansionBudget {
            words_left: words,
            ..ExpansionBudget::with_bytes(bytes)
        }
    }

    /// Take one shell word: false once the file's scripts have yielded [`MAX_WORDS`].
    pub fn take_word(&mut self) -> bool {
        self.words_left
            .checked_sub(1)
            .map(|n| self.words_left = n)
            .is_some()
    }

    /// Nothing left: words that would expand stay as written.
    pub fn is_spent(&self) -> bool {
        self.left == 0
    }

    /// The bytes still allowed; an engine that builds a value piece by piece stops before
    /// its output exceeds `min(MAX_WORD, left)`, so it never allocates past the budget.
    pub fn left(&self) -> usize {
        self.left
    }

    /// Charge one expanded word or value of `bytes`: [`ExpandLimit::Size`] past [`MAX_WORD`]
    /// (the budget is kept), [`ExpandLimit::Total`] past what is left (the budget is spent).
    pub fn charge(&mut self, bytes: usize) -> Result<(), ExpandLimit> {
        if bytes > MAX_WORD {
            return Err(ExpandLimit::Size);
        }
        if bytes > self.left {
            self.left = 0;
            return Err(ExpandLimit::Total);
        }
        self.left -= bytes;
        Ok(())
    }

    /// Whether `limit` should be reported: every limit but the file-wide ones
    /// ([`ExpandLimit::Total`], [`ExpandLimit::Words`]), which are reported the first time
    /// only.
    pub fn should_report(&mut self, limit: ExpandLimit) -> bool {
        if !matches!(limit, ExpandLimit::Total | ExpandLimit::Words) {
            return true;
        }
        if self.reported.contains(&limit) {
            return false;
        }
        self.reported.push(limit);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_bounded_per_word_and_in_all() {
        let mut b = ExpansionBudget::with_bytes(3 * MAX_WORD);
        assert_eq!(b.charge(MAX_WORD + 1), Err(ExpandLimit::Size));
        // A word over the per-word bound costs nothing.
        assert_eq!(b.left(), 3 * MAX_WORD);
        for _ in 0..3 {
            assert_eq!(b.charge(MAX_WORD), Ok(()));
        }
        assert!(b.is_spent());
        assert_eq!(b.charge(1), Err(ExpandLimit::Total));
        let mut b = ExpansionBudget::with_bytes(10);
        assert_eq!(b.charge(11), Err(ExpandLimit::Total));
        // Spent by the refused charge: a smaller one later does not slip through.
        assert_eq!(b.charge(1), Err(ExpandLimit::Total));
        assert!(b.should_report(ExpandLimit::Total));
        assert!(!b.should_report(ExpandLimit::Total));
        assert!(b.should_report(ExpandLimit::Size));
        assert!(b.should_report(ExpandLimit::Words));
        assert!(!b.should_report(ExpandLimit::Words));
        let mut w = ExpansionBudget::with_words(100, 2);
        assert!(w.take_word() && w.take_word() && !w.take_word());
    }
}
