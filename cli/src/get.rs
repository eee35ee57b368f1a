//! `kubestore get KIND [NAME]`: the server's tables (`-o wide` adds the priority-1 columns,
//! `-A` a NAMESPACE column), the objects as the server returns them (`-o yaml|json`,
//! `-o jsonpath=`, `-o custom-columns=`), `kind/name` lines (`-o name`), and `-w`, which prints
//! the list and then a line per change as it happens. Any kind discovery names.
//!
//! Lists are read in pages of 500 ([`pager`], kubectl's `--chunk-size=500`) and printed as one
//! table once the last page is in (kubectl too collects its chunks before printing, so that the
//! columns line up); `-w` then watches from the list's resourceVersion, so that it prints what
//! changed after the list and nothing the list already showed.

use kubestore_controllers::informer::{self, Delta};
use kubestore_proto::{
    meta::v1::ListOptions,
    registry::v1::{ApiResource, Output},
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use crate::{
    Ch, Error,
    client::{Client, name_of},
    manifest,
    pager::{self, Listing},
    resource::{kind_word, unknown},
    table::Printer,
};

/// What to get and how to print it.
#[derive(Debug, Clone, Default)]
pub struct GetOptions {
    /// Namespace ("" with `all_namespaces`).
    pub namespace: String,
    /// `-A`.
    pub all_namespaces: bool,
    /// One object by name.
    pub name: Option<String>,
    /// `-l`.
    pub label_selector: String,
    /// `--field-selector`.
    pub field_selector: String,
    /// `-w`.
    pub watch: bool,
    /// `-o`: "", "wide", "yaml", "json", "name", `jsonpath=...`, `custom-columns=...`.
    pub output: String,
    /// Keep `metadata.managedFields` in yaml and json (kubectl's `--show-managed-fields`).
    pub show_managed_fields: bool,
}

impl GetOptions {
    /// The List options these ask for: the selectors, and `metadata.name` pinned when one
    /// object is watched by name.
    pub fn list_options(&self) -> ListOptions {
        let mut field_selector = self.field_selector.clone();
        if let Some(name) = &self.name {
            let pin = format!("metadata.name={name}");
            field_selector = if field_selector.is_empty() {
                pin
            } else {
                format!("{field_selector},{pin}")
            };
        }
        ListOptions {
            label_selector: self.label_selector.clone(),
            field_selector,
            ..Default::default()
        }
    }
}

/// How the objects are printed.
enum Format {
    /// The server's Table.
    Table { wide: bool },
    /// `kind/name` per object.
    Name,
    /// The objects' JSON, rendered by [`manifest::render`].
    Structured,
}

impl Format {
    fn of(output: &str) -> Self {
        if output == "name" {
            Self::Name
        } else if manifest::is_structured(output) {
            Self::Structured
        } else {
            Self::Table {
                wide: output == "wide",
            }
        }
    }

    /// What the server is asked for.
    fn wire(&self) -> Output {
        match self {
            Self::Table { .. } => Output::Table,
            _ => Output::Object,
        }
    }
}

/// Runs `get` of `kind` (as typed: `pods`, `cm`, `CronTab`, `leases.coordination.k8s.io`);
/// `out` receives each chunk of output (the table, then each watched line).
pub async fn get(
    ch: &Ch,
    kind: &str,
    o: &GetOptions,
    mut out: impl FnMut(String),
) -> Result<(), Error> {
    let client = Client::new(ch);
    let discovery = client.discover().await?;
    let r = discovery
        .resolve(kind)
        .ok_or_else(|| Error::Client(unknown(kind)))?
        .clone();
    let ns = if o.all_namespaces {
        ""
    } else {
        o.namespace.as_str()
    };
    let format = Format::of(&o.output);
    // kubectl leaves managed fields out of yaml and json unless asked (they are long and
    // rarely what a reader wants); JSONPath and columns see them.
    let hide = !o.show_managed_fields && matches!(o.output.as_str(), "yaml" | "json");
    let render = |v: &Value| {
        if hide {
            manifest::render(&without_managed_fields(v), &o.output)
        } else {
            manifest::render(v, &o.output)
        }
        .map_err(Error::Client)
    };
    // kubectl prints a NAMESPACE column under -A for namespaced resources only.
    let printer =
        |columns: &Value, wide: bool| Printer::new(columns, wide, o.all_namespaces && r.namespaced);
    if let Some(name) = &o.name
        && !o.watch
    {
        let obj = client.get(&r, ns, name, format.wire()).await?;
        out(match format {
            Format::Name => format!("{}/{}", kind_word(&r), name_of(&obj)),
            Format::Structured => render(&obj)?,
            Format::Table { wide } => {
                let rows = obj["rows"].as_array().cloned().unwrap_or_default();
                printer(&obj["columnDefinitions"], wide).table(&rows)
            }
        });
        return Ok(());
    }
    let options = o.list_options();
    let listed = pager::list_all(&client, &r, ns, options.clone(), format.wire()).await?;
    let table = match format {
        Format::Table { wide } => Some(printer(&listed.columns, wide)),
        _ => None,
    };
    let line = |item: &Value| -> Result<String, Error> {
        Ok(match &table {
            Some(t) => t.line(item),
            None if matches!(format, Format::Name) => {
                format!("{}/{}", kind_word(&r), name_of(item))
            }
            None => render(item)?,
        })
    };
    if listed.items.is_empty() && !o.watch && !matches!(format, Format::Structured) {
        // kubectl's words, on standard error: a script reading stdout sees no objects.
        eprintln!("{}", nothing_found(ns, &r));
    } else if let Some(t) = &table {
        out(t.table(&listed.items));
    } else if matches!(format, Format::Name) {
        let lines: Vec<String> = listed.items.iter().map(&line).collect::<Result<_, _>>()?;
        out(lines.join("\n"));
    } else {
        out(render(&list_of(&listed))?);
    }
    if !o.watch {
        return Ok(());
    }
    // Through the informer: a watch that drops (registry-svc restarting) resumes from the last
    // version printed; an expired one lists again and prints every object again.
    let source = Listing {
        client,
        resource: r.clone(),
        namespace: ns.to_string(),
        options,
        output: format.wire(),
    };
    let (tx, mut rx) = mpsc::channel::<Delta<Value>>(256);
    let (_keep, stop) = watch::channel(false);
    let print = async {
        while let Some(delta) = rx.recv().await {
            let items = match delta {
                Delta::Replace(all) => all,
                Delta::Upsert(item) | Delta::Delete(item) => vec![item],
            };
            for item in &items {
                out(line(item)?);
            }
        }
        Ok::<(), Error>(())
    };
    tokio::select! {
        () = informer::run_from(source, tx, stop, Some(listed.meta.resource_version)) => {}
        r = print => r?,
    }
    Ok(())
}

/// A list in Kubernetes' shape, as kubectl prints several objects (`kind: List`).
fn list_of(listed: &pager::Listed) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": { "resourceVersion": listed.meta.resource_version },
        "items": listed.items,
    })
}

/// kubectl's line for an empty list.
fn nothing_found(ns: &str, r: &ApiResource) -> String {
    if ns.is_empty() || !r.namespaced {
        "No resources found".to_string()
    } else {
        format!("No resources found in {ns} namespace.")
    }
}

/// `v` (an object, or a list of them) without `metadata.managedFields`.
fn without_managed_fields(v: &Value) -> Value {
    let mut v = v.clone();
    let strip = |o: &mut Value| {
        if let Some(Value::Object(m)) = o.get_mut("metadata") {
            m.remove("managedFields");
        }
    };
    strip(&mut v);
    if let Some(Value::Array(items)) = v.get_mut("items") {
        items.iter_mut().for_each(strip);
    }
    v
}
