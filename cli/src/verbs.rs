//! The kubectl-like verbs of the `kubestore` binary: their command lines (clap) and how each
//! runs and prints (results on stdout, warnings and errors on stderr, exit status 1 when
//! anything failed). The work is the library's: [`get`](crate::get), [`apply`](crate::apply),
//! [`modify`](crate::modify), [`description`](crate::description), all through the generic API.

use std::process::ExitCode;

use clap::Subcommand;
use kubestore_proto::meta::v1::PropagationPolicy;

use crate::{
    Ch, DryRun, Error,
    apply::{self, Deletion},
    client::Client,
    client_dry_run,
    get::{GetOptions, get},
    modify::{self, Target},
};

/// A kubectl-like verb.
#[derive(Subcommand)]
pub enum Verb {
    /// List objects, or print one (kubectl-like).
    Get {
        /// Any kind registry-svc serves, by plural, singular, short name or kind, optionally
        /// with its group: pods (po), cm, ns, leases, crd, a custom kind (crontabs, ct, CronTab,
        /// crontabs.stable.example.com).
        kind: String,
        /// One object.
        name: Option<String>,
        /// Every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// Label selector, e.g. `app=web,tier in (1,2)`.
        #[arg(short = 'l', long)]
        selector: Option<String>,
        /// Field selector, e.g. `spec.nodeName=node-1`.
        #[arg(long)]
        field_selector: Option<String>,
        /// After listing, print changes as they happen.
        #[arg(short, long)]
        watch: bool,
        /// Output: wide (the server's priority-1 columns too), yaml, json (the objects as
        /// registry-svc returns them), name (`kind/name` per object), `jsonpath=TEMPLATE`
        /// (`'{.items[*].metadata.name}'`) or `custom-columns=NAME:.metadata.name,...`.
        #[arg(short, long, default_value = "")]
        output: String,
        /// Keep `metadata.managedFields` in yaml and json output (left out by default, as
        /// kubectl does).
        #[arg(long)]
        show_managed_fields: bool,
    },
    /// Show one object and the Events about it (kubectl-like).
    Describe {
        /// The kind (as for get).
        kind: String,
        /// The object's name.
        name: String,
    },
    /// Create or update the objects of a manifest (YAML, several documents allowed).
    Apply {
        /// Manifest file (`-`: standard input).
        #[arg(short, long)]
        filename: String,
        /// `server`: every write is registry-svc's dry run (validated, defaulted and answered;
        /// nothing stored); `client`: told after reading each object, nothing sent; `none`:
        /// for real.
        #[arg(long, value_enum, default_value = "none")]
        dry_run: DryRun,
    },
    /// Delete the objects of a manifest (`-f FILE`), or objects by kind and name
    /// (`delete pod web db`), as kubectl does.
    Delete {
        /// Manifest file (`-`: standard input).
        #[arg(short, long, conflicts_with = "resource")]
        filename: Option<String>,
        /// The kind, then one or more names.
        #[arg(value_name = "KIND NAME", num_args = 0..)]
        resource: Vec<String>,
        /// `server`: registry-svc's dry run (checked and answered, nothing deleted); `client`:
        /// each object read, nothing deleted.
        #[arg(long, value_enum, default_value = "none")]
        dry_run: DryRun,
        /// What happens to the objects' dependents: background (the default: deleted after
        /// them), foreground (deleted before them) or orphan (left, their owner reference
        /// removed).
        #[arg(long, value_enum)]
        cascade: Option<Cascade>,
        /// Seconds the objects have to stop (0: at once); unset: the kind's default.
        #[arg(long)]
        grace_period: Option<i64>,
    },
    /// Set or remove labels of an object: `label pod web tier=front old-` (kubectl's form).
    Label(MapChange),
    /// Set or remove annotations of an object: `annotate cm settings owner=team-a`.
    Annotate(MapChange),
    /// Change an object by a patch, applied by registry-svc: `patch cm settings -p
    /// '{"data":{"color":"red"}}'`.
    Patch {
        /// The kind (as for get).
        kind: String,
        /// The object's name.
        name: String,
        /// The patch (JSON or YAML).
        #[arg(short, long)]
        patch: String,
        /// strategic (the default for built-in kinds), merge (RFC 7386, the default for custom
        /// kinds) or json (RFC 6902 operations).
        #[arg(long = "type", value_enum)]
        patch_type: Option<crate::patch::PatchType>,
        /// `server`: registry-svc's dry run (nothing stored); `client`: the change computed
        /// and printed, nothing sent.
        #[arg(long, value_enum, default_value = "none")]
        dry_run: DryRun,
    },
    /// Edit an object in `$KUBE_EDITOR`, `$EDITOR` or vi; saved changes are written at the
    /// version that was read.
    Edit {
        /// The kind (as for get).
        kind: String,
        /// The object's name.
        name: String,
    },
}

/// The arguments of `label` and `annotate`.
#[derive(clap::Args)]
pub struct MapChange {
    /// The kind (as for get).
    kind: String,
    /// The object's name.
    name: String,
    /// `key=value` to set, `key-` to remove.
    #[arg(required = true, num_args = 1..)]
    changes: Vec<String>,
    /// Let `key=value` replace a different value already set.
    #[arg(long)]
    overwrite: bool,
    /// `server`: registry-svc's dry run (nothing stored); `client`: the change computed and
    /// printed, nothing sent.
    #[arg(long, value_enum, default_value = "none")]
    dry_run: DryRun,
}

/// kubectl's `--cascade`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Cascade {
    /// Dependents deleted after the object.
    Background,
    /// Dependents deleted before the object.
    Foreground,
    /// Dependents left, their owner reference removed.
    Orphan,
}

impl From<Cascade> for PropagationPolicy {
    fn from(c: Cascade) -> Self {
        match c {
            Cascade::Background => Self::Background,
            Cascade::Foreground => Self::Foreground,
            Cascade::Orphan => Self::Orphan,
        }
    }
}

/// Runs `verb` against registry-svc in `namespace` (`-n`); the process's exit status.
pub async fn run(ch: &Ch, namespace: String, verb: Verb) -> ExitCode {
    match verb {
        Verb::Get {
            kind,
            name,
            all_namespaces,
            selector,
            field_selector,
            watch,
            output,
            show_managed_fields,
        } => {
            if let Err(e) = crate::manifest::check_output(&output) {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
            let o = GetOptions {
                namespace,
                all_namespaces,
                name,
                label_selector: selector.unwrap_or_default(),
                field_selector: field_selector.unwrap_or_default(),
                watch,
                output,
                show_managed_fields,
            };
            exit(get(ch, &kind, &o, |s| println!("{s}")).await)
        }
        Verb::Describe { kind, name } => {
            let r = crate::description::describe(ch, &namespace, &kind, &name).await;
            exit(r.map(|text| println!("{text}")))
        }
        Verb::Apply { filename, dry_run } => {
            let how = Deletion::dry_run(dry_run == DryRun::Server);
            manifest_command(ch, &namespace, &filename, true, dry_run, &how).await
        }
        Verb::Delete {
            filename,
            resource,
            dry_run,
            cascade,
            grace_period,
        } => {
            let how = Deletion {
                dry_run: dry_run == DryRun::Server,
                grace_period,
                propagation: cascade.map(PropagationPolicy::from),
            };
            match (filename, resource.split_first()) {
                (Some(f), _) => manifest_command(ch, &namespace, &f, false, dry_run, &how).await,
                (None, Some((kind, names))) if !names.is_empty() => {
                    let (lines, ok) = if dry_run == DryRun::Client {
                        client_dry_run::delete_named(ch, kind, &namespace, names).await
                    } else {
                        apply::delete_named_with(ch, &namespace, kind, names, &how).await
                    };
                    print_results(lines, ok)
                }
                _ => {
                    eprintln!(
                        "error: delete needs -f FILE, or a kind and at least one name (delete pod web)"
                    );
                    ExitCode::FAILURE
                }
            }
        }
        Verb::Label(c) => map_command(ch, namespace, "labels", c).await,
        Verb::Annotate(c) => map_command(ch, namespace, "annotations", c).await,
        Verb::Patch {
            kind,
            name,
            patch,
            patch_type,
            dry_run,
        } => {
            let Some(target) = target(ch, &namespace, &kind, &name).await else {
                return ExitCode::FAILURE;
            };
            let r = modify::patch(ch, &target, patch_type, &patch, dry_run).await;
            changed(&target, r, "patched", "patched (no change)", dry_run)
        }
        Verb::Edit { kind, name } => {
            let Some(target) = target(ch, &namespace, &kind, &name).await else {
                return ExitCode::FAILURE;
            };
            let editor = ["KUBE_EDITOR", "EDITOR"]
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
                .unwrap_or_else(|| "vi".into());
            match modify::edit(ch, &target, &editor, false).await {
                Ok(modify::Edited::Cancelled) => {
                    println!("Edit cancelled, no changes made.");
                    ExitCode::SUCCESS
                }
                Ok(modify::Edited::Edited { warnings }) => {
                    for w in warnings {
                        eprintln!("{w}");
                    }
                    println!("{} edited", target.what());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// The exit status of a verb, its error printed.
fn exit(r: Result<(), Error>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// The object `kind`/`name` names, or None after saying why not.
async fn target(ch: &Ch, namespace: &str, kind: &str, name: &str) -> Option<Target> {
    match Target::resolve(&Client::new(ch), kind, namespace, name).await {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("{e}");
            None
        }
    }
}

/// `label` and `annotate`: `field` is `labels` or `annotations`.
async fn map_command(ch: &Ch, namespace: String, field: &str, c: MapChange) -> ExitCode {
    let MapChange {
        kind,
        name,
        changes,
        overwrite,
        dry_run,
    } = c;
    let edits = match crate::patch::map_edits(&changes) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(target) = target(ch, &namespace, &kind, &name).await else {
        return ExitCode::FAILURE;
    };
    let r = modify::edit_map(ch, &target, field, &edits, overwrite, dry_run).await;
    let (done, not) = if field == "labels" {
        ("labeled", "not labeled")
    } else {
        ("annotated", "not annotated")
    };
    changed(&target, r, done, not, dry_run)
}

/// Prints what a change did (kubectl's words) and says how it went.
fn changed(
    target: &Target,
    r: Result<modify::Changed, Error>,
    done: &str,
    unchanged: &str,
    dry_run: DryRun,
) -> ExitCode {
    match r {
        Ok(c) => {
            for w in &c.warnings {
                eprintln!("{w}");
            }
            let word = if c.changed { done } else { unchanged };
            println!("{} {word}{}", target.what(), dry_run.suffix());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

async fn manifest_command(
    ch: &Ch,
    ns: &str,
    file: &str,
    apply_it: bool,
    dry_run: DryRun,
    how: &Deletion,
) -> ExitCode {
    let (docs, unreadable) = match apply::read(file) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (mut lines, ok) = match (dry_run, apply_it) {
        (DryRun::Client, _) => client_dry_run::manifest(ch, ns, docs, apply_it).await,
        (_, true) => apply::apply_with(ch, ns, docs, how.dry_run).await,
        (_, false) => apply::delete_with(ch, ns, docs, how).await,
    };
    let ok = ok && unreadable.is_empty();
    lines.extend(unreadable);
    print_results(lines, ok)
}

/// Prints apply/delete results and says how it went. Results on stdout, warnings and errors on
/// stderr: `apply -f x.yaml | grep created` and scripts reading stdout see only what was done.
fn print_results(lines: Vec<String>, ok: bool) -> ExitCode {
    for l in lines {
        if apply::is_diagnostic(&l) {
            eprintln!("{l}");
        } else {
            println!("{l}");
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
