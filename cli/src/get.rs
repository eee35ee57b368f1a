//! `kubestore get`: kubectl-like tables (`-o wide`), Kubernetes-shaped YAML/JSON (`-o yaml`,
//! `-o json`), and `-w`, which prints the list and then a row per change as it happens.
//!
//! Lists are read in pages of 500 ([`pager`], kubectl's `--chunk-size=500`) and printed as one
//! table once the last page is in (kubectl too collects its chunks before printing, so that the
//! columns line up); `-w` then watches from the list's resourceVersion, so that it prints what
//! changed after the list and nothing the list already showed.

use kubestore_controllers::informer::{self, Delta};
use kubestore_proto::meta::v1::ListOptions;
use tokio::sync::{mpsc, watch};
use tonic::Status;

use crate::{
    Ch,
    kinds::{Kind, Listing},
    manifest, pager, table,
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
    /// `-o`: "", "wide", "yaml", "json", "name".
    pub output: String,
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

fn header<K: Kind>(o: &GetOptions) -> Vec<String> {
    let mut h = Vec::new();
    if o.all_namespaces {
        h.push("NAMESPACE".to_string());
    }
    h.push("NAME".into());
    h.extend(K::columns(o.output == "wide").iter().map(|c| c.to_string()));
    h
}

fn row<K: Kind>(obj: &K, o: &GetOptions) -> Vec<String> {
    let m = obj.meta();
    let mut r = Vec::new();
    if o.all_namespaces {
        r.push(m.namespace.clone());
    }
    r.push(m.name.clone());
    r.extend(obj.cells(o.output == "wide", table::now()));
    r
}

/// `kind/name`, kubectl's `-o name` (`configmap/settings`).
fn name_of<K: Kind>(obj: &K) -> String {
    format!("{}/{}", K::KIND.to_lowercase(), obj.meta().name)
}

/// Runs `get`; `out` receives each chunk of output (the table, then each watched row).
pub async fn get<K: Kind>(
    ch: &Ch,
    o: &GetOptions,
    mut out: impl FnMut(String),
) -> Result<(), Status> {
    let ns = if o.all_namespaces {
        ""
    } else {
        o.namespace.as_str()
    };
    let structured = manifest::is_structured(&o.output);
    if let Some(name) = &o.name
        && !o.watch
    {
        let obj = K::get(ch, ns, name).await?;
        out(if o.output == "name" {
            name_of::<K>(&obj)
        } else if structured {
            manifest::render(&manifest::to_value(&obj), &o.output).map_err(Status::internal)?
        } else {
            table::render(&header::<K>(o), &[row(&obj, o)])
        });
        return Ok(());
    }
    let options = o.list_options();
    let (meta, items) = pager::list_all::<K>(ch, ns, options.clone()).await?;
    if o.output == "name" {
        if !items.is_empty() {
            out(items
                .iter()
                .map(name_of::<K>)
                .collect::<Vec<_>>()
                .join("\n"));
        }
    } else if structured {
        out(manifest::render(
            &manifest::list_value(&items, &meta.resource_version),
            &o.output,
        )
        .map_err(Status::internal)?);
    } else if items.is_empty() && !o.watch {
        out(if ns.is_empty() {
            format!("No {} found.", K::PLURAL)
        } else {
            format!("No {} found in {ns} namespace.", K::PLURAL)
        });
    } else {
        let rows: Vec<Vec<String>> = items.iter().map(|i| row(i, o)).collect();
        out(table::render(&header::<K>(o), &rows));
    }
    if !o.watch {
        return Ok(());
    }
    // Through the informer: a watch that drops (registry-svc restarting) resumes from the last
    // version printed; an expired one lists again and prints every object again.
    let source = Listing::<K>::new(ch.clone(), ns, options);
    let (tx, mut rx) = mpsc::channel::<Delta<K>>(256);
    let (_keep, stop) = watch::channel(false);
    let print = async {
        while let Some(delta) = rx.recv().await {
            let objects = match delta {
                Delta::Replace(all) => all,
                Delta::Upsert(obj) | Delta::Delete(obj) => vec![obj],
            };
            for obj in objects {
                out(if o.output == "name" {
                    name_of::<K>(&obj)
                } else if structured {
                    manifest::render(&manifest::to_value(&obj), &o.output)
                        .map_err(Status::internal)?
                } else {
                    // Rows padded like the table's header (kubectl does the same).
                    let h = header::<K>(o);
                    let t = table::render(&h, &[row(&obj, o)]);
                    t.lines().nth(1).unwrap_or_default().to_string()
                });
            }
        }
        Ok::<(), Status>(())
    };
    tokio::select! {
        () = informer::run_from(source, tx, stop, Some(meta.resource_version)) => {}
        r = print => r?,
    }
    Ok(())
}
