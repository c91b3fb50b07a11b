//! Retries, aborts, cancellation and timeouts, for both wire formats.

use super::common::{
    BOTH, KEY, fast_policy, guard, retries, run, run_with, text_deltas, user_request,
};
use baton_llm::retry::RetryPolicy;
use baton_llm::{LlmError, StreamEvent};
use baton_test_support::{MockResponse, MockServer};
use std::ops::ControlFlow;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn rate_limit_with_retry_after_zero_then_success() {
    for wire in BOTH {
        let server = MockServer::start().await;
        server.enqueue(wire.error(429, "slow down").header("retry-after", "0"));
        server.enqueue(wire.text(&["after ", "waiting"]));
        let client = wire.client(&server, fast_policy());
        let (result, events) = run(&*client, &user_request("hi")).await;
        assert_eq!(result.expect("answer").text, "after waiting", "{wire:?}");
        assert_eq!(server.requests().len(), 2, "{wire:?}");
        assert_eq!(retries(&events), [2], "{wire:?}");
        match &events[0] {
            StreamEvent::Retrying { reason, .. } => assert!(reason.contains("429"), "{reason}"),
            other => panic!("{wire:?}: expected Retrying first, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    for wire in BOTH {
        let server = MockServer::start().await;
        server.enqueue(MockResponse::text(500, "internal"));
        server.enqueue(MockResponse::text(529, "overloaded"));
        server.enqueue(wire.text(&["ok"]));
        let client = wire.client(&server, fast_policy());
        let (result, events) = run(&*client, &user_request("hi")).await;
        assert_eq!(result.expect("answer").text, "ok", "{wire:?}");
        assert_eq!(server.requests().len(), 3, "{wire:?}");
        assert_eq!(retries(&events), [2, 3], "{wire:?}");
    }
}

#[tokio::test]
async fn retries_are_bounded_and_the_last_error_is_returned() {
    for wire in BOTH {
        let server = MockServer::start().await;
        for _ in 0..5 {
            server.enqueue(MockResponse::text(503, "unavailable"));
        }
        let client = wire.client(&server, fast_policy());
        let (result, events) = run(&*client, &user_request("hi")).await;
        match result {
            Err(LlmError::Http {
                status: 503, body, ..
            }) => assert_eq!(body, "unavailable"),
            other => panic!("{wire:?}: expected HTTP 503, got {other:?}"),
        }
        assert_eq!(server.requests().len(), 4, "{wire:?}");
        assert_eq!(retries(&events), [2, 3, 4], "{wire:?}");
    }
}

#[tokio::test]
async fn a_connection_dropped_mid_stream_is_retried() {
    for wire in BOTH {
        let server = MockServer::start().await;
        let events = wire.text_events(&["par", "tial", " never", " ends"]);
        server.enqueue(MockResponse::sse_events(events).drop_after(wire.preamble() + 2));
        server.enqueue(wire.text(&["whole"]));
        let client = wire.client(&server, fast_policy());
        let (result, events) = run(&*client, &user_request("hi")).await;
        assert_eq!(result.expect("answer").text, "whole", "{wire:?}");
        assert_eq!(server.requests().len(), 2, "{wire:?}");
        assert_eq!(retries(&events), [2], "{wire:?}");
        let before_retry: Vec<_> = events
            .iter()
            .take_while(|e| !matches!(e, StreamEvent::Retrying { .. }))
            .cloned()
            .collect();
        assert!(
            !text_deltas(&before_retry).is_empty(),
            "{wire:?}: no delta before the drop"
        );
    }
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    for wire in BOTH {
        // Bind and drop a listener to get a port nobody listens on.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        drop(listener);
        let client = wire.client_at(&url, fast_policy());
        let (result, events) = run(&*client, &user_request("hi")).await;
        assert!(
            matches!(result, Err(LlmError::Connection { .. })),
            "{wire:?}: {result:?}"
        );
        assert_eq!(retries(&events), [2, 3, 4], "{wire:?}");
    }
}

#[tokio::test]
async fn a_bad_request_is_not_retried_and_keeps_the_body() {
    for wire in BOTH {
        let server = MockServer::start().await;
        server.enqueue(wire.error(400, "messages: field required"));
        server.enqueue(wire.text(&["never served"]));
        let client = wire.client(&server, fast_policy());
        let (result, events) = run(&*client, &user_request("hi")).await;
        match result {
            Err(LlmError::Http { status, body, .. }) => {
                assert_eq!(status, 400, "{wire:?}");
                assert!(
                    body.contains("messages: field required"),
                    "{wire:?}: {body}"
                );
            }
            other => panic!("{wire:?}: expected HTTP 400, got {other:?}"),
        }
        assert_eq!(server.requests().len(), 1, "{wire:?}");
        assert!(retries(&events).is_empty(), "{wire:?}");
    }
}

#[tokio::test]
async fn error_bodies_are_truncated_and_never_contain_the_key() {
    for wire in BOTH {
        let server = MockServer::start().await;
        let echo = format!("invalid key {KEY} {}", "x".repeat(10_000));
        server.enqueue(MockResponse::text(401, &echo));
        let client = wire.client(&server, fast_policy());
        let (result, _) = run(&*client, &user_request("hi")).await;
        let error = result.expect_err("401");
        let message = error.to_string();
        assert!(!message.contains(KEY), "{wire:?}: key leaked: {message}");
        assert!(message.contains("[redacted]"), "{wire:?}");
        assert!(message.len() < 2300, "{wire:?}: {} bytes", message.len());
    }
}

#[tokio::test]
async fn the_sink_breaking_mid_stream_aborts_with_the_partial_answer() {
    for wire in BOTH {
        let server = MockServer::start().await;
        server.enqueue(wire.endless(&["Hel", "lo"]));
        let client = wire.client(&server, fast_policy());
        let cancel = CancellationToken::new();
        let mut seen = String::new();
        let (result, events) = run_with(&*client, &user_request("hi"), &cancel, |event| {
            if let StreamEvent::TextDelta(text) = event {
                seen.push_str(text);
                if seen.len() >= 5 {
                    return ControlFlow::Break("budget".into());
                }
            }
            ControlFlow::Continue(())
        })
        .await;
        match result {
            Err(LlmError::Aborted { reason, partial }) => {
                assert_eq!(reason, "budget", "{wire:?}");
                assert_eq!(partial.text, "Hello", "{wire:?}");
            }
            other => panic!("{wire:?}: expected Aborted, got {other:?}"),
        }
        assert!(retries(&events).is_empty(), "{wire:?}");
        // The response was dropped: the server sees the client go away.
        guard(server.wait_for_disconnects(1)).await;
        assert_eq!(server.requests().len(), 1, "{wire:?}");
    }
}

#[tokio::test]
async fn the_sink_breaking_on_a_retry_aborts_without_retrying() {
    for wire in BOTH {
        let server = MockServer::start().await;
        server.enqueue(MockResponse::text(500, "boom"));
        server.enqueue(wire.text(&["never served"]));
        let client = wire.client(&server, fast_policy());
        let cancel = CancellationToken::new();
        let (result, _) = run_with(
            &*client,
            &user_request("hi"),
            &cancel,
            |event| match event {
                StreamEvent::Retrying { .. } => ControlFlow::Break("no retries".into()),
                _ => ControlFlow::Continue(()),
            },
        )
        .await;
        assert!(
            matches!(result, Err(LlmError::Aborted { ref reason, .. }) if reason == "no retries"),
            "{wire:?}: {result:?}"
        );
        assert_eq!(server.requests().len(), 1, "{wire:?}");
    }
}

#[tokio::test]
async fn cancellation_mid_stream_ends_the_call() {
    for wire in BOTH {
        let server = MockServer::start().await;
        server.enqueue(wire.endless(&["streaming"]));
        let client = wire.client(&server, fast_policy());
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let (result, events) = run_with(&*client, &user_request("hi"), &cancel, |event| {
            if matches!(event, StreamEvent::TextDelta(_)) {
                trigger.cancel();
            }
            ControlFlow::Continue(())
        })
        .await;
        assert!(
            matches!(result, Err(LlmError::Cancelled)),
            "{wire:?}: {result:?}"
        );
        assert_eq!(text_deltas(&events), "streaming", "{wire:?}");
        guard(server.wait_for_disconnects(1)).await;
    }
}

#[tokio::test]
async fn cancellation_during_a_backoff_sleep_ends_the_call() {
    for wire in BOTH {
        let server = MockServer::start().await;
        server.enqueue(wire.error(429, "later").header("retry-after", "3600"));
        let policy = RetryPolicy {
            max_retry_after: Duration::from_secs(3600),
            ..fast_policy()
        };
        let client = wire.client(&server, policy);
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let (result, _) = run_with(&*client, &user_request("hi"), &cancel, |event| {
            if matches!(event, StreamEvent::Retrying { .. }) {
                trigger.cancel();
            }
            ControlFlow::Continue(())
        })
        .await;
        assert!(
            matches!(result, Err(LlmError::Cancelled)),
            "{wire:?}: {result:?}"
        );
        assert_eq!(server.requests().len(), 1, "{wire:?}");
    }
}

#[tokio::test]
async fn an_already_cancelled_token_sends_nothing() {
    for wire in BOTH {
        let server = MockServer::start().await;
        server.enqueue(wire.text(&["unused"]));
        let client = wire.client(&server, fast_policy());
        let cancel = CancellationToken::new();
        cancel.cancel();
        let (result, events) = run_with(&*client, &user_request("hi"), &cancel, |_| {
            ControlFlow::Continue(())
        })
        .await;
        assert!(matches!(result, Err(LlmError::Cancelled)), "{wire:?}");
        assert!(events.is_empty(), "{wire:?}");
        assert!(server.requests().is_empty(), "{wire:?}");
    }
}

#[tokio::test]
async fn a_stream_that_never_completes_times_out() {
    for wire in BOTH {
        let server = MockServer::start().await;
        server.enqueue(wire.endless(&["slow"]));
        let policy = RetryPolicy {
            timeout: Duration::from_secs(1),
            ..fast_policy()
        };
        let client = wire.client(&server, policy);
        let (result, events) = run(&*client, &user_request("hi")).await;
        assert!(
            matches!(result, Err(LlmError::Timeout { .. })),
            "{wire:?}: {result:?}"
        );
        assert_eq!(text_deltas(&events), "slow", "{wire:?}");
    }
}

#[tokio::test]
async fn an_empty_queue_answers_a_clear_500() {
    let server = MockServer::start().await;
    let policy = RetryPolicy {
        max_attempts: 1,
        ..fast_policy()
    };
    let client = BOTH[0].client(&server, policy);
    let (result, _) = run(&*client, &user_request("hi")).await;
    let message = result.expect_err("nothing queued").to_string();
    assert!(message.contains("no response queued"), "{message}");
    assert!(message.contains("POST /v1/chat/completions"), "{message}");
}
