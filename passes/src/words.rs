//! Enums a pass option and `tile.config` name by one word a variant
//! ([`named_by_words!`]).

/// Gives an enum its words: `WORDS` (the option's and `tile.config`'s
/// words, in variant order, which callers check a word against first),
/// `parse` (the variant a word names; any other word names `default`) and
/// `word`.
macro_rules! named_by_words {
    ($ty:ident { $($variant:ident => $word:literal),+ $(,)? } default $default:ident) => {
        impl $ty {
            /// The option and `tile.config` words, in variant order.
            pub const WORDS: &'static [&'static str] = &[$($word),+];

            /// The variant a word of [`Self::WORDS`] names (any other word
            /// names the default).
            pub fn parse(word: &str) -> $ty {
                match word {
                    $($word => $ty::$variant,)+
                    _ => $ty::$default,
                }
            }

            /// Its word.
            pub fn word(self) -> &'static str {
                match self {
                    $($ty::$variant => $word,)+
                }
            }
        }
    };
}
pub(crate) use named_by_words;

#[cfg(test)]
mod tests {
    use crate::cluster::Along;
    use crate::selection::{PieceOrder, SplitReduce};

    /// Each word names its variant and back, in variant order; a word no
    /// variant has names the default.
    #[test]
    fn words_name_their_variants_and_back() {
        assert_eq!(SplitReduce::WORDS.iter().map(|w| SplitReduce::parse(w)).collect::<Vec<_>>(), [SplitReduce::Cluster, SplitReduce::Workspace, SplitReduce::Spread]);
        assert_eq!(PieceOrder::WORDS.iter().map(|w| PieceOrder::parse(w)).collect::<Vec<_>>(), [PieceOrder::Reversed, PieceOrder::InOrder]);
        assert_eq!(Along::WORDS.iter().map(|w| Along::parse(w)).collect::<Vec<_>>(), [Along::M, Along::N, Along::None]);
        for w in Along::WORDS {
            assert_eq!(Along::parse(w).word(), *w);
        }
        assert_eq!((SplitReduce::parse("k"), PieceOrder::parse("k"), Along::parse("k")), (SplitReduce::Cluster, PieceOrder::Reversed, Along::None));
    }
}
