//! The routes' handlers: each checks access, builds its view off the async threads, and answers
//! with the HTML page or, under `Accept: application/json`, the same view as JSON. The one
//! handler that changes anything records an answer to an escalation through [`crate::Host`].

use crate::security::Refusal;
use crate::views::{self, ViewError};
use crate::{AnswerRefused, AppState, render};
use axum::Json;
use axum::extract::{Form, Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// `value` as a JSON answer, through the one mask every front end prints through
/// ([`baton_core::secrets::redact`]).
fn masked_json<T: Serialize>(value: &T) -> Response {
    match serde_json::to_string(value) {
        Ok(text) => (
            [(header::CONTENT_TYPE, "application/json")],
            baton_core::secrets::redact(&text).into_owned(),
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Whether the client asked for JSON.
pub fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json") && !a.contains("text/html"))
}

#[derive(Serialize)]
struct ErrorView<'a> {
    status: u16,
    message: &'a str,
    back: &'a str,
}

/// A refused request: its status and one sentence (JSON `{"error": …}` or plain text).
pub fn refusal(r: &Refusal) -> Response {
    let mut response = (r.status(), r.message()).into_response();
    if *r == Refusal::Token {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"baton\""),
        );
    }
    response
}

fn error(state: &AppState, headers: &HeaderMap, status: StatusCode, message: &str) -> Response {
    if wants_json(headers) {
        return (status, Json(serde_json::json!({ "error": message }))).into_response();
    }
    let view = ErrorView {
        status: status.as_u16(),
        message,
        back: "/",
    };
    page(state, "error.html", "", "error", 0, &view, None).map_or_else(
        |_| (status, message.to_owned()).into_response(),
        |html| (status, html).into_response(),
    )
}

fn page<T: Serialize>(
    state: &AppState,
    template: &str,
    nav: &str,
    title: &str,
    seq: i64,
    view: &T,
    notice: Option<&str>,
) -> Result<Html<String>, minijinja::Error> {
    let frame = render::Frame {
        page: view,
        nav,
        title,
        csrf: state.gate.csrf(),
        read_only: state.gate.read_only(),
        seq,
        notice,
    };
    Ok(Html(state.render.render(template, &frame)?))
}

/// Builds a view on a blocking thread (it reads files and SQLite).
async fn build<T: Send + 'static>(
    state: &Arc<AppState>,
    f: impl FnOnce(&AppState) -> Result<T, ViewError> + Send + 'static,
) -> Result<T, ViewError> {
    let s = Arc::clone(state);
    match tokio::task::spawn_blocking(move || f(&s)).await {
        Ok(r) => r,
        Err(e) => Err(ViewError::NotFound(format!(
            "the page could not be built: {e}"
        ))),
    }
}

/// Answers with `view` as JSON or as the page `template`.
#[allow(clippy::too_many_arguments)]
fn respond<T: Serialize>(
    state: &AppState,
    headers: &HeaderMap,
    template: &str,
    nav: &str,
    title: &str,
    seq: i64,
    result: Result<T, ViewError>,
    notice: Option<&str>,
) -> Response {
    let view = match result {
        Ok(v) => v,
        Err(ViewError::NotFound(m)) => return error(state, headers, StatusCode::NOT_FOUND, &m),
        Err(e) => {
            return error(
                state,
                headers,
                StatusCode::INTERNAL_SERVER_ERROR,
                &e.to_string(),
            );
        }
    };
    if wants_json(headers) {
        return masked_json(&view);
    }
    match page(state, template, nav, title, seq, &view, notice) {
        Ok(html) => {
            let mut r = html.into_response();
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            r
        }
        Err(e) => error(
            state,
            headers,
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the page could not be rendered: {e}"),
        ),
    }
}

/// A `?token=` link: a valid token becomes a cookie and the link is replaced by the page
/// without it; a wrong one is refused. `None`: the query holds no token.
fn token_link(state: &AppState, uri: &Uri, query: Option<&str>) -> Option<Response> {
    let token = query?
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == "token")
        .map(|(_, v)| v)?;
    if !state.gate.is_token(token) {
        return Some(refusal(&Refusal::Token));
    }
    let cookie = format!(
        "{}={token}; HttpOnly; SameSite=Strict; Path=/",
        state.gate.cookie_name()
    );
    let mut r = (StatusCode::SEE_OTHER, "").into_response();
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(uri.path()) {
        h.insert(header::LOCATION, v);
    }
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        h.insert(header::SET_COOKIE, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Some(r)
}

/// The checks every page makes before it is built.
fn admit(
    state: &AppState,
    headers: &HeaderMap,
    uri: &Uri,
    query: Option<&str>,
) -> Option<Response> {
    if let Some(r) = token_link(state, uri, query) {
        return Some(r);
    }
    state.gate.check_read(headers).err().map(|r| refusal(&r))
}

/// `GET /`: the board.
pub async fn board(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = admit(&state, &headers, &uri, query.as_deref()) {
        return r;
    }
    let result = build(&state, |s| views::board(&s.project, s.host.as_ref())).await;
    let seq = result.as_ref().map_or(0, |b| b.seq);
    respond(
        &state,
        &headers,
        "board.html",
        "board",
        "Board",
        seq,
        result,
        None,
    )
}

/// `GET /story/{key}`.
pub async fn story(
    State(state): State<Arc<AppState>>,
    Path(key): Path<String>,
    uri: Uri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = admit(&state, &headers, &uri, query.as_deref()) {
        return r;
    }
    let k = key.clone();
    let result = build(&state, move |s| {
        views::story(&s.project, s.host.as_ref(), &k)
    })
    .await;
    let seq = result.as_ref().map_or(0, |s| s.seq);
    let title = format!("Story {key}");
    respond(
        &state,
        &headers,
        "story.html",
        "board",
        &title,
        seq,
        result,
        None,
    )
}

/// `GET /runs`.
pub async fn runs(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = admit(&state, &headers, &uri, query.as_deref()) {
        return r;
    }
    let result = build(&state, |s| views::runs(&s.project, s.host.as_ref())).await;
    let seq = result.as_ref().map_or(0, |r| r.seq);
    respond(
        &state,
        &headers,
        "runs.html",
        "runs",
        "Runs",
        seq,
        result,
        None,
    )
}

/// `GET /escalations`.
pub async fn escalations(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = admit(&state, &headers, &uri, query.as_deref()) {
        return r;
    }
    let result = build(&state, |s| views::escalations(s.host.as_ref())).await;
    let seq = result.as_ref().map_or(0, |e| e.seq);
    let notice = query
        .as_deref()
        .and_then(|q| q.split('&').find_map(|p| p.strip_prefix("answered=")))
        .and_then(|id| id.parse::<i64>().ok())
        .map(|id| {
            format!(
                "Escalation #{id} answered; a run waiting for it goes on, otherwise the next \
                 `baton sprint` (or `baton sdd`) continues with it."
            )
        });
    respond(
        &state,
        &headers,
        "escalations.html",
        "escalations",
        "Escalations",
        seq,
        result,
        notice.as_deref(),
    )
}

/// `GET /plan`.
pub async fn plan(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = admit(&state, &headers, &uri, query.as_deref()) {
        return r;
    }
    let result = build(&state, |s| Ok(views::plan(&s.project))).await;
    respond(
        &state,
        &headers,
        "plan.html",
        "plan",
        "Plan",
        0,
        result,
        None,
    )
}

/// `GET /plan/{doc}`: one planning document by kind.
pub async fn plan_doc(
    State(state): State<Arc<AppState>>,
    Path(doc): Path<String>,
    uri: Uri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = admit(&state, &headers, &uri, query.as_deref()) {
        return r;
    }
    let result = build(&state, move |s| views::plan_doc(&s.project, &doc)).await;
    respond(
        &state,
        &headers,
        "plan.html",
        "plan",
        "Plan",
        0,
        result,
        None,
    )
}

/// The answer form.
#[derive(Debug, Deserialize)]
pub struct AnswerForm {
    /// The choice: its id, number or label.
    pub choice: String,
    /// The page's CSRF token (a script may send the header instead).
    pub csrf: Option<String>,
    /// Why: remembered with the answer as a decision for later work (docs/memory.md).
    pub why: Option<String>,
}

/// `POST /escalations/{id}/answer`: records a human's answer, as `baton answer` does.
pub async fn answer(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    form: Result<Form<AnswerForm>, axum::extract::rejection::FormRejection>,
) -> Response {
    let form = match form {
        Ok(Form(f)) => Some(f),
        Err(_) => None,
    };
    if let Err(r) = state
        .gate
        .check_write(&headers, form.as_ref().and_then(|f| f.csrf.as_deref()))
    {
        return refusal(&r);
    }
    let Ok(id) = id.parse::<i64>() else {
        return error(
            &state,
            &headers,
            StatusCode::NOT_FOUND,
            &format!("`{id}` is not an escalation number"),
        );
    };
    let Some(form) = form else {
        return error(
            &state,
            &headers,
            StatusCode::BAD_REQUEST,
            "send the answer as a form with a `choice` field",
        );
    };
    let host = Arc::clone(&state.host);
    let result = tokio::task::spawn_blocking(move || {
        let answered = host.answer(id, &form.choice)?;
        if let Some(why) = form.why.as_deref().map(str::trim).filter(|w| !w.is_empty()) {
            host.remember_answer(&answered, why);
        }
        Ok(answered)
    })
    .await
    .unwrap_or_else(|e| Err(AnswerRefused::Failed(e.to_string())));
    match result {
        Ok(answered) if wants_json(&headers) => masked_json(&answered),
        Ok(answered) => {
            let mut r = (StatusCode::SEE_OTHER, "").into_response();
            if let Ok(v) = HeaderValue::from_str(&format!("/escalations?answered={}", answered.id))
            {
                r.headers_mut().insert(header::LOCATION, v);
            }
            r
        }
        Err(refused) => {
            let status = match refused {
                AnswerRefused::Unknown(_) => StatusCode::NOT_FOUND,
                AnswerRefused::AlreadyAnswered { .. } => StatusCode::CONFLICT,
                AnswerRefused::NotAnOption(_) => StatusCode::UNPROCESSABLE_ENTITY,
                AnswerRefused::Failed(_) => StatusCode::INTERNAL_SERVER_ERROR,
            };
            error(&state, &headers, status, &refused.to_string())
        }
    }
}

/// `GET /assets/board.js`.
pub async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        render::SCRIPT,
    )
        .into_response()
}

/// `GET /assets/board.css`.
pub async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        render::STYLE,
    )
        .into_response()
}

/// Anything else.
pub async fn not_found(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = state.gate.check_read(&headers) {
        return refusal(&r);
    }
    error(
        &state,
        &headers,
        StatusCode::NOT_FOUND,
        &format!("no page at `{}`", uri.path()),
    )
}
