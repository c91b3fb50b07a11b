//! The model client trait: one streamed model turn, cancellable, observable.

use crate::error::LlmError;
use crate::types::{ChatRequest, ChatResponse, StreamEvent};
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use tokio_util::sync::CancellationToken;

/// Receives stream events; returning `ControlFlow::Break(reason)` aborts the stream at once (the
/// client returns [`LlmError::Aborted`] with the partial response).
pub type StreamSink<'a> = dyn FnMut(&StreamEvent) -> ControlFlow<String> + Send + 'a;

/// A boxed future, so clients can be chosen at run time (`dyn ModelClient`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A model provider.
pub trait ModelClient: Send + Sync {
    /// Runs one model turn. Retries (429, 5xx, dropped connections) happen inside; the sink sees
    /// every delta and a `Retrying` event before each retry. `cancel` ends the call with
    /// [`LlmError::Cancelled`].
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        sink: &'a mut StreamSink<'_>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>>;
}
