//! Server reflection as every gRPC tool reads it: both services answer v1 and v1alpha (grpcurl
//! before 1.8.8 knows only v1alpha), list their services, and resolve the `google.rpc` error
//! details carried in every error (so grpcurl prints `ErrorInfo` and `BadRequest`).

use kubestore_tests::{Cluster, services::channel};
use prost::Message;

/// What to ask after the service list.
#[derive(Clone, Copy)]
enum Ask<'a> {
    /// FileContainingSymbol.
    Symbol(&'a str),
    /// FileByFilename.
    File(&'a str),
}

/// Files of an answer: (name, imports).
type Files = Vec<(String, Vec<String>)>;

/// What one reflection version answered.
struct Answers {
    services: Vec<String>,
    /// Per symbol: the files of the answer as (name, imports), the first defining the symbol;
    /// or the error.
    symbols: Vec<(String, Result<Files, String>)>,
}

/// A function asking `url` over one reflection version: the service list, then the file
/// containing each of `symbols`. The two versions' messages are the same, in two packages.
macro_rules! ask {
    ($name:ident, $pb:path) => {
        async fn $name(url: &str, asks: &[Ask<'_>]) -> Answers {
            use pb::{
                ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
                server_reflection_request::MessageRequest,
                server_reflection_response::MessageResponse,
            };
            use $pb as pb;
            let mut client = ServerReflectionClient::new(channel(url).await);
            let mut requests = vec![MessageRequest::ListServices(String::new())];
            requests.extend(asks.iter().map(|a| match a {
                Ask::Symbol(s) => MessageRequest::FileContainingSymbol(s.to_string()),
                Ask::File(f) => MessageRequest::FileByFilename(f.to_string()),
            }));
            let n = requests.len();
            let mut stream = client
                .server_reflection_info(tokio_stream::iter(requests.into_iter().map(|r| {
                    ServerReflectionRequest {
                        host: String::new(),
                        message_request: Some(r),
                    }
                })))
                .await
                .expect("reflection answers")
                .into_inner();
            let mut answers = Answers {
                services: Vec::new(),
                symbols: Vec::new(),
            };
            for i in 0..n {
                // tonic's reflection ends the stream with NOT_FOUND for an unknown symbol.
                let resp = match stream.message().await {
                    Ok(r) => r.expect("one response per request"),
                    Err(status) => {
                        answers
                            .symbols
                            .push((asked(asks[i - 1]), Err(status.to_string())));
                        break;
                    }
                };
                match resp.message_response {
                    Some(MessageResponse::ListServicesResponse(l)) => {
                        answers.services = l.service.into_iter().map(|s| s.name).collect();
                    }
                    Some(MessageResponse::FileDescriptorResponse(f)) => {
                        let files = f
                            .file_descriptor_proto
                            .iter()
                            .map(|b| {
                                let f = prost_types::FileDescriptorProto::decode(b.as_slice())
                                    .expect("a file descriptor");
                                (f.name().to_string(), f.dependency)
                            })
                            .collect();
                        answers.symbols.push((asked(asks[i - 1]), Ok(files)));
                    }
                    Some(MessageResponse::ErrorResponse(e)) => {
                        answers
                            .symbols
                            .push((asked(asks[i - 1]), Err(e.error_message)));
                    }
                    other => panic!("unexpected reflection response {other:?}"),
                }
            }
            answers
        }
    };
}

fn asked(a: Ask<'_>) -> String {
    match a {
        Ask::Symbol(s) | Ask::File(s) => s.to_string(),
    }
}

ask!(ask_v1, tonic_reflection::pb::v1);
ask!(ask_v1alpha, tonic_reflection::pb::v1alpha);

const DETAILS: [&str; 2] = ["google.rpc.ErrorInfo", "google.rpc.BadRequest"];

/// Checks one version's answers, and that every import a tool needs can be fetched by name
/// (grpcurl asks for missing imports with FileByFilename).
async fn check<F, Fut>(ask: F, url: &str, service: &str, symbol: &str, version: &str)
where
    F: Fn(String, Vec<String>, Vec<String>) -> Fut,
    Fut: std::future::Future<Output = Answers>,
{
    let symbols: Vec<String> = [symbol, DETAILS[0], DETAILS[1]]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let answers = ask(url.to_string(), symbols.clone(), Vec::new()).await;
    for s in [service, "grpc.health.v1.Health"] {
        assert!(
            answers.services.iter().any(|n| n == s),
            "{version}: {s} not listed in {:?}",
            answers.services
        );
    }
    assert_eq!(answers.symbols.len(), symbols.len(), "{version}");
    let mut have: Vec<String> = Vec::new();
    let mut imports: Vec<String> = Vec::new();
    let absorb = |answers: &Answers, have: &mut Vec<String>, imports: &mut Vec<String>| {
        for (asked, files) in &answers.symbols {
            let files = files
                .as_ref()
                .unwrap_or_else(|e| panic!("{version}: {asked} not resolved: {e}"));
            assert!(!files.is_empty(), "{version}: no file for {asked}");
            if asked.starts_with("google.rpc.") {
                assert!(
                    files[0].0.ends_with("error_details.proto"),
                    "{version}: {files:?}"
                );
            }
            for (name, deps) in files {
                have.push(name.clone());
                imports.extend(deps.iter().cloned());
            }
        }
    };
    absorb(&answers, &mut have, &mut imports);
    // Fetch the imports not sent along, until every import is at hand.
    for _ in 0..5 {
        let missing: Vec<String> = imports
            .iter()
            .filter(|i| !have.contains(i))
            .cloned()
            .collect();
        if missing.is_empty() {
            return;
        }
        let more = ask(url.to_string(), Vec::new(), missing).await;
        absorb(&more, &mut have, &mut imports);
    }
    panic!("{version}: imports never resolved: {imports:?} with {have:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn both_services_answer_reflection_v1_and_v1alpha_with_error_details() {
    let cluster = Cluster::full().await;
    let storage = cluster.storage.url();
    let registry = cluster.registry.as_ref().expect("registry-svc runs").url();
    let ask = |version: &'static str| {
        move |url: String, symbols: Vec<String>, files: Vec<String>| async move {
            let asks: Vec<Ask<'_>> = symbols
                .iter()
                .map(|s| Ask::Symbol(s))
                .chain(files.iter().map(|f| Ask::File(f)))
                .collect();
            if version == "v1" {
                ask_v1(&url, &asks).await
            } else {
                ask_v1alpha(&url, &asks).await
            }
        }
    };
    for (url, service, symbol) in [
        (&storage, "storage.v1.Storage", "storage.v1.GetRequest"),
        (&registry, "core.v1.Pods", "core.v1.Pod"),
    ] {
        for version in ["v1", "v1alpha"] {
            check(ask(version), url, service, symbol, version).await;
        }
    }
    // A symbol nobody defines is an error answer, not a hang or a dropped stream.
    let unknown = ask_v1alpha(&storage, &[Ask::Symbol("no.such.Message")]).await;
    assert!(unknown.symbols[0].1.is_err(), "unknown symbol resolved");
}
