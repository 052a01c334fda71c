//! The embedding seam recall's vector ranking calls. Implementations live in
//! `dream-llm` (HTTP providers) and, for tests, in `testing::HashEmbedder`.
//!
//! An embedder turns texts into vectors of a fixed dimension. Dream computes
//! every vector itself from a memory's own text; a vector is never accepted from
//! outside.

use std::fmt::Debug;

use async_trait::async_trait;

use crate::llm::ModelError;

/// The most texts one [`Embedder::embed`] call accepts (implementations split
/// larger inputs into smaller requests themselves).
pub const MAX_EMBED_BATCH: usize = 2048;
/// The largest dimension accepted.
pub const MAX_DIMENSIONS: usize = 16_384;

/// Why an embedding call failed. Never carries a key or a text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The call itself failed: transport, timeout, credentials, rate limit,
    /// provider error, oversized or unreadable answer.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The request is unusable (no text, too many texts).
    #[error("invalid embedding request: {0}")]
    InvalidRequest(&'static str),
    /// The answer holds another number of vectors than texts were sent.
    #[error("the provider returned {got} vectors for {expected} texts")]
    Count {
        /// Texts sent.
        expected: usize,
        /// Vectors received.
        got: usize,
    },
    /// A vector has another dimension than the embedder's.
    #[error("the provider returned a vector of dimension {got}, expected {expected}")]
    Dimension {
        /// The embedder's dimension.
        expected: usize,
        /// The vector's.
        got: usize,
    },
    /// A vector holds a NaN or an infinity, or is all zeros.
    #[error("the provider returned a vector that is not usable (non-finite or zero)")]
    Degenerate,
}

/// An embedding model. Dyn-compatible: the engine holds `Arc<dyn Embedder>`.
#[async_trait]
pub trait Embedder: Send + Sync + Debug + 'static {
    /// The model's name: stored beside every vector, so vectors of another model
    /// are recomputed rather than compared.
    fn model(&self) -> &str;
    /// The dimension of every vector this embedder returns.
    fn dimensions(&self) -> usize;
    /// A short, key-free description (`openai:text-embedding-3-small`).
    fn describe(&self) -> String;
    /// One vector per text, in order, each of [`Embedder::dimensions`] finite
    /// numbers (checked with [`check_vectors`]). At most [`MAX_EMBED_BATCH`] texts.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

#[async_trait]
impl<T: Embedder + ?Sized> Embedder for std::sync::Arc<T> {
    fn model(&self) -> &str {
        (**self).model()
    }
    fn dimensions(&self) -> usize {
        (**self).dimensions()
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts).await
    }
}

/// Checks a request: at least one text, at most [`MAX_EMBED_BATCH`].
pub fn check_texts(texts: &[String]) -> Result<(), EmbedError> {
    if texts.is_empty() {
        return Err(EmbedError::InvalidRequest("no text to embed"));
    }
    if texts.len() > MAX_EMBED_BATCH {
        return Err(EmbedError::InvalidRequest("too many texts in one call"));
    }
    Ok(())
}

/// Checks an answer: `expected` vectors, each of `dimensions` finite numbers,
/// none all zeros.
pub fn check_vectors(
    vectors: &[Vec<f32>],
    expected: usize,
    dimensions: usize,
) -> Result<(), EmbedError> {
    if vectors.len() != expected {
        return Err(EmbedError::Count {
            expected,
            got: vectors.len(),
        });
    }
    for vector in vectors {
        if vector.len() != dimensions {
            return Err(EmbedError::Dimension {
                expected: dimensions,
                got: vector.len(),
            });
        }
        if vector.iter().any(|x| !x.is_finite()) || vector.iter().all(|x| *x == 0.0) {
            return Err(EmbedError::Degenerate);
        }
    }
    Ok(())
}

/// The vector scaled to unit length (all zeros stays all zeros).
pub fn normalized(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in &mut vector {
            *x /= norm;
        }
    }
    vector
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked() {
        let ok = vec![vec![1.0, 0.0], vec![0.0, 2.0]];
        assert_eq!(check_vectors(&ok, 2, 2), Ok(()));
        assert_eq!(
            check_vectors(&ok, 3, 2),
            Err(EmbedError::Count {
                expected: 3,
                got: 2
            })
        );
        assert_eq!(
            check_vectors(&ok, 2, 3),
            Err(EmbedError::Dimension {
                expected: 3,
                got: 2
            })
        );
        for bad in [
            vec![f32::NAN, 1.0],
            vec![f32::INFINITY, 0.0],
            vec![0.0, 0.0],
        ] {
            assert_eq!(check_vectors(&[bad], 1, 2), Err(EmbedError::Degenerate));
        }
    }

    #[test]
    fn requests_are_checked() {
        assert!(check_texts(&[]).is_err());
        assert!(check_texts(&vec![String::new(); MAX_EMBED_BATCH + 1]).is_err());
        assert!(check_texts(&["a".to_owned()]).is_ok());
    }

    #[test]
    fn normalizing_gives_unit_length() {
        let v = normalized(vec![3.0, 4.0]);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        assert_eq!(normalized(vec![0.0, 0.0]), vec![0.0, 0.0]);
    }
}
