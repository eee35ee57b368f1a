//! The roles and bindings the RBAC authorizer decides from, held in memory (fed by watches:
//! `rbac::start`) and indexed by subject, so a decision costs a few hash lookups whatever the
//! number of bindings: upstream's `VisitRulesFor` walks every binding of a namespace; here the
//! bindings that name the user, one of its groups or its ServiceAccount are found directly.
//! The index of bindings is rebuilt when a binding changes (rare), never per request.

use std::{collections::HashMap, sync::Arc};

use kubestore_proto::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

use crate::{authn::UserInfo, resource::Resource};

/// One binding as the index holds it: its name and the role it refers to.
type Bound = (String, RoleRef);

/// Bindings by whom they name, in one scope (cluster-wide, or one namespace): looked up by
/// `&str`, so a decision allocates nothing.
#[derive(Default)]
struct Subjects {
    users: HashMap<String, Vec<Bound>>,
    groups: HashMap<String, Vec<Bound>>,
    /// ServiceAccounts by namespace, then name.
    service_accounts: HashMap<String, HashMap<String, Vec<Bound>>>,
}

impl Subjects {
    /// Files a binding `name` of `role` under `subject`, a subject of a binding in `namespace`
    /// ("" for a ClusterRoleBinding). A subject that names nobody (a ServiceAccount without a
    /// namespace in a ClusterRoleBinding, an unknown kind) is left out, as upstream's
    /// `appliesToUser` matches neither.
    fn add(&mut self, subject: &Subject, namespace: &str, name: &str, role: &RoleRef) {
        let bound = (name.to_string(), role.clone());
        match subject.kind.as_str() {
            "User" => self
                .users
                .entry(subject.name.clone())
                .or_default()
                .push(bound),
            "Group" => self
                .groups
                .entry(subject.name.clone())
                .or_default()
                .push(bound),
            "ServiceAccount" => {
                let ns = if subject.namespace.is_empty() {
                    namespace
                } else {
                    &subject.namespace
                };
                if !ns.is_empty() {
                    self.service_accounts
                        .entry(ns.to_string())
                        .or_default()
                        .entry(subject.name.clone())
                        .or_default()
                        .push(bound);
                }
            }
            _ => {}
        }
    }

    /// The bindings that name `user`, its groups or its ServiceAccount, each once.
    fn of<'a>(&'a self, user: &UserInfo, out: &mut Vec<&'a Bound>) {
        let mut push = |found: Option<&'a Vec<Bound>>| {
            for b in found.into_iter().flatten() {
                if !out.iter().any(|o| o.0 == b.0) {
                    out.push(b);
                }
            }
        };
        push(self.users.get(user.name.as_str()));
        for g in &user.groups {
            push(self.groups.get(g.as_str()));
        }
        if let Some((ns, name)) = crate::authn::service_account(&user.name) {
            push(self.service_accounts.get(ns).and_then(|m| m.get(name)));
        }
    }
}

fn name_of<R: Resource>(obj: &R) -> (String, String) {
    obj.meta()
        .map(|m| (m.namespace.clone(), m.name.clone()))
        .unwrap_or_default()
}

/// Roles, cluster roles and bindings, with bindings indexed by subject.
#[derive(Default)]
pub struct Index {
    /// Role rules by namespace, then name.
    roles: HashMap<String, HashMap<String, Arc<[PolicyRule]>>>,
    /// ClusterRoles by name, with their rules shared (a decision clones an `Arc`).
    pub(super) cluster_roles: HashMap<String, (Arc<ClusterRole>, Arc<[PolicyRule]>)>,
    cluster_bindings: HashMap<String, (RoleRef, Vec<Subject>)>,
    bindings: HashMap<(String, String), (RoleRef, Vec<Subject>)>,
    /// The bindings by subject: cluster-wide, and per namespace.
    cluster_subjects: Subjects,
    subjects: HashMap<String, Subjects>,
}

impl Index {
    /// Replaces every Role.
    pub fn reset_roles(&mut self, items: Vec<Role>) {
        self.roles.clear();
        for r in items {
            self.put_role(r);
        }
    }

    /// Adds or replaces a Role.
    pub fn put_role(&mut self, r: Role) {
        let (ns, name) = name_of(&r);
        self.roles
            .entry(ns)
            .or_default()
            .insert(name, r.rules.into());
    }

    /// Removes a Role.
    pub fn remove_role(&mut self, r: &Role) {
        let (ns, name) = name_of(r);
        if let Some(m) = self.roles.get_mut(&ns) {
            m.remove(&name);
        }
    }

    /// Replaces every ClusterRole.
    pub fn reset_cluster_roles(&mut self, items: Vec<ClusterRole>) {
        self.cluster_roles.clear();
        for r in items {
            self.put_cluster_role(r);
        }
    }

    /// Adds or replaces a ClusterRole.
    pub fn put_cluster_role(&mut self, r: ClusterRole) {
        let (_, name) = name_of(&r);
        let rules: Arc<[PolicyRule]> = r.rules.clone().into();
        self.cluster_roles.insert(name, (Arc::new(r), rules));
    }

    /// Removes a ClusterRole.
    pub fn remove_cluster_role(&mut self, r: &ClusterRole) {
        self.cluster_roles.remove(&name_of(r).1);
    }

    /// Replaces every RoleBinding.
    pub fn reset_bindings(&mut self, items: Vec<RoleBinding>) {
        self.bindings.clear();
        for b in items {
            self.insert_binding(b);
        }
        self.reindex();
    }

    /// Adds or replaces a RoleBinding.
    pub fn put_binding(&mut self, b: RoleBinding) {
        self.insert_binding(b);
        self.reindex();
    }

    fn insert_binding(&mut self, b: RoleBinding) {
        let id = name_of(&b);
        self.bindings
            .insert(id, (b.role_ref.unwrap_or_default(), b.subjects));
    }

    /// Removes a RoleBinding.
    pub fn remove_binding(&mut self, b: &RoleBinding) {
        self.bindings.remove(&name_of(b));
        self.reindex();
    }

    /// Replaces every ClusterRoleBinding.
    pub fn reset_cluster_bindings(&mut self, items: Vec<ClusterRoleBinding>) {
        self.cluster_bindings.clear();
        for b in items {
            self.insert_cluster_binding(b);
        }
        self.reindex();
    }

    /// Adds or replaces a ClusterRoleBinding.
    pub fn put_cluster_binding(&mut self, b: ClusterRoleBinding) {
        self.insert_cluster_binding(b);
        self.reindex();
    }

    fn insert_cluster_binding(&mut self, b: ClusterRoleBinding) {
        let (_, name) = name_of(&b);
        self.cluster_bindings
            .insert(name, (b.role_ref.unwrap_or_default(), b.subjects));
    }

    /// Removes a ClusterRoleBinding.
    pub fn remove_cluster_binding(&mut self, b: &ClusterRoleBinding) {
        self.cluster_bindings.remove(&name_of(b).1);
        self.reindex();
    }

    fn reindex(&mut self) {
        let mut cluster = Subjects::default();
        for (name, (role, subjects)) in &self.cluster_bindings {
            for s in subjects {
                cluster.add(s, "", name, role);
            }
        }
        let mut namespaced: HashMap<String, Subjects> = HashMap::new();
        for ((ns, name), (role, subjects)) in &self.bindings {
            let at = namespaced.entry(ns.clone()).or_default();
            for s in subjects {
                at.add(s, ns, name, role);
            }
        }
        // In name order, so a decision visits bindings in the same order every time.
        let sort = |s: &mut Subjects| {
            for v in s.users.values_mut().chain(s.groups.values_mut()) {
                v.sort_by(|a, b| a.0.cmp(&b.0));
            }
            for m in s.service_accounts.values_mut() {
                for v in m.values_mut() {
                    v.sort_by(|a, b| a.0.cmp(&b.0));
                }
            }
        };
        sort(&mut cluster);
        namespaced.values_mut().for_each(sort);
        self.cluster_subjects = cluster;
        self.subjects = namespaced;
    }

    /// The rules of a role a binding in `namespace` refers to, or upstream's error.
    pub fn role_rules(&self, r: &RoleRef, namespace: &str) -> Result<Arc<[PolicyRule]>, String> {
        match r.kind.as_str() {
            "ClusterRole" => self
                .cluster_roles
                .get(r.name.as_str())
                .map(|(_, rules)| rules.clone())
                .ok_or_else(|| {
                    format!(
                        "clusterrole.rbac.authorization.k8s.io {:?} not found",
                        r.name
                    )
                }),
            "Role" if !namespace.is_empty() => self
                .roles
                .get(namespace)
                .and_then(|m| m.get(r.name.as_str()))
                .cloned()
                .ok_or_else(|| format!("role.rbac.authorization.k8s.io {:?} not found", r.name)),
            other => Err(format!("unsupported role reference kind: {other:?}")),
        }
    }

    /// Calls `visit` with each rule that applies to `user` in `namespace` ("": cluster-wide
    /// bindings only), cluster-wide bindings first, until it returns false (upstream's
    /// `VisitRulesFor`); the errors met (a binding to a missing role) are returned.
    pub fn visit(
        &self,
        user: &UserInfo,
        namespace: &str,
        mut visit: impl FnMut(&PolicyRule) -> bool,
    ) -> Vec<String> {
        let mut errors = Vec::new();
        let mut scopes: Vec<(&str, Vec<&Bound>)> = Vec::with_capacity(2);
        let mut found = Vec::new();
        self.cluster_subjects.of(user, &mut found);
        scopes.push(("", found));
        if !namespace.is_empty()
            && let Some(s) = self.subjects.get(namespace)
        {
            let mut found = Vec::new();
            s.of(user, &mut found);
            scopes.push((namespace, found));
        }
        for (scope, bound) in scopes {
            for (_, role) in bound {
                match self.role_rules(role, scope) {
                    Ok(rules) => {
                        if !rules.iter().all(&mut visit) {
                            return errors;
                        }
                    }
                    Err(e) => errors.push(e),
                }
            }
        }
        errors
    }

    /// Every rule that applies to `user` in `namespace`, and the errors met.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let errors = self.visit(user, namespace, |r| {
            rules.push(r.clone());
            true
        });
        (rules, errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::meta::v1::ObjectMeta;

    fn meta(ns: &str, name: &str) -> Option<ObjectMeta> {
        Some(ObjectMeta {
            namespace: ns.into(),
            name: name.into(),
            ..Default::default()
        })
    }

    fn rule(verb: &str, resource: &str) -> PolicyRule {
        PolicyRule {
            verbs: vec![verb.into()],
            api_groups: vec!["".into()],
            resources: vec![resource.into()],
            ..Default::default()
        }
    }

    fn subject(kind: &str, name: &str, ns: &str) -> Subject {
        Subject {
            kind: kind.into(),
            name: name.into(),
            namespace: ns.into(),
            api_group: String::new(),
        }
    }

    fn binding(
        ns: &str,
        name: &str,
        kind: &str,
        role: &str,
        subjects: Vec<Subject>,
    ) -> RoleBinding {
        RoleBinding {
            metadata: meta(ns, name),
            subjects,
            role_ref: Some(RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: kind.into(),
                name: role.into(),
            }),
        }
    }

    fn verbs(index: &Index, user: &UserInfo, ns: &str) -> (Vec<String>, Vec<String>) {
        let (rules, errors) = index.rules_for(user, ns);
        (rules.into_iter().flat_map(|r| r.verbs).collect(), errors)
    }

    #[test]
    fn bindings_apply_to_users_groups_and_service_accounts() {
        let mut index = Index::default();
        index.put_role(Role {
            metadata: meta("team-a", "reader"),
            rules: vec![rule("get", "pods")],
        });
        index.put_cluster_role(ClusterRole {
            metadata: meta("", "lister"),
            rules: vec![rule("list", "pods")],
            aggregation_rule: None,
        });
        index.put_binding(binding(
            "team-a",
            "b1",
            "Role",
            "reader",
            vec![subject("User", "alice", "")],
        ));
        index.put_binding(binding(
            "team-a",
            "b2",
            "ClusterRole",
            "lister",
            vec![subject("Group", "dev", "")],
        ));
        index.put_binding(binding(
            "team-a",
            "b3",
            "Role",
            "reader",
            vec![subject("ServiceAccount", "robot", "")],
        ));
        index.put_binding(binding(
            "team-a",
            "b4",
            "Role",
            "missing",
            vec![subject("User", "alice", "")],
        ));
        let alice = UserInfo {
            name: "alice".into(),
            groups: vec!["dev".into()],
            ..Default::default()
        };
        let (mut got, errors) = verbs(&index, &alice, "team-a");
        got.sort();
        assert_eq!(got, ["get", "list"]);
        assert_eq!(
            errors,
            ["role.rbac.authorization.k8s.io \"missing\" not found"]
        );
        assert_eq!(verbs(&index, &alice, "team-b").0, Vec::<String>::new());
        assert_eq!(verbs(&index, &alice, "").0, Vec::<String>::new());
        let robot = UserInfo {
            name: "system:serviceaccount:team-a:robot".into(),
            ..Default::default()
        };
        assert_eq!(verbs(&index, &robot, "team-a").0, ["get"]);
        // A ClusterRoleBinding applies everywhere; one to a namespace-less ServiceAccount to
        // nobody.
        index.put_cluster_binding(ClusterRoleBinding {
            metadata: meta("", "c1"),
            subjects: vec![
                subject("User", "bob", ""),
                subject("ServiceAccount", "robot", ""),
            ],
            role_ref: Some(RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "ClusterRole".into(),
                name: "lister".into(),
            }),
        });
        let bob = UserInfo {
            name: "bob".into(),
            ..Default::default()
        };
        assert_eq!(verbs(&index, &bob, "").0, ["list"]);
        assert_eq!(verbs(&index, &bob, "team-z").0, ["list"]);
        assert_eq!(verbs(&index, &robot, "").0, Vec::<String>::new());
        index.remove_binding(&binding("team-a", "b1", "Role", "reader", vec![]));
        index.remove_binding(&binding("team-a", "b4", "Role", "reader", vec![]));
        assert_eq!(verbs(&index, &alice, "team-a").0, ["list"]);
    }
}
