//! The roles and bindings the RBAC authorizer decides from, held in memory (fed by watches:
//! `rbac::start`) and indexed by subject, so a decision costs a few hash lookups whatever the
//! number of bindings: upstream's `VisitRulesFor` walks every binding of a namespace; here the
//! bindings that name the user, one of its groups or its ServiceAccount are found directly.
//! The index of bindings is rebuilt when a binding changes (rare), never per request.

use std::{
    collections::{BTreeSet, HashMap},
    sync::Arc,
};

use kubestore_proto::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

use crate::{authn::UserInfo, resource::Resource};

/// Who a binding's subject is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum SubjectKey {
    User(String),
    Group(String),
    ServiceAccount(String, String),
}

/// The key of `s` in a binding of `namespace` ("" for a ClusterRoleBinding); None for a subject
/// that names nobody (a ServiceAccount without a namespace in a ClusterRoleBinding, an unknown
/// kind: upstream's `appliesToUser` matches neither).
fn key(s: &Subject, namespace: &str) -> Option<SubjectKey> {
    match s.kind.as_str() {
        "User" => Some(SubjectKey::User(s.name.clone())),
        "Group" => Some(SubjectKey::Group(s.name.clone())),
        "ServiceAccount" => {
            let ns = if s.namespace.is_empty() {
                namespace
            } else {
                &s.namespace
            };
            (!ns.is_empty()).then(|| SubjectKey::ServiceAccount(ns.into(), s.name.clone()))
        }
        _ => None,
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
    roles: HashMap<(String, String), Arc<[PolicyRule]>>,
    pub(super) cluster_roles: HashMap<String, Arc<ClusterRole>>,
    cluster_bindings: HashMap<String, RoleRef>,
    bindings: HashMap<(String, String), RoleRef>,
    cluster_subjects: HashMap<String, Vec<Subject>>,
    subjects: HashMap<(String, String), Vec<Subject>>,
    /// Binding names by subject: cluster-wide, and per namespace.
    by_subject: HashMap<SubjectKey, BTreeSet<String>>,
    by_subject_in: HashMap<(String, SubjectKey), BTreeSet<String>>,
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
        let id = name_of(&r);
        self.roles.insert(id, r.rules.into());
    }

    /// Removes a Role.
    pub fn remove_role(&mut self, r: &Role) {
        self.roles.remove(&name_of(r));
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
        self.cluster_roles.insert(name, Arc::new(r));
    }

    /// Removes a ClusterRole.
    pub fn remove_cluster_role(&mut self, r: &ClusterRole) {
        self.cluster_roles.remove(&name_of(r).1);
    }

    /// Replaces every RoleBinding.
    pub fn reset_bindings(&mut self, items: Vec<RoleBinding>) {
        self.bindings.clear();
        self.subjects.clear();
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
            .insert(id.clone(), b.role_ref.unwrap_or_default());
        self.subjects.insert(id, b.subjects);
    }

    /// Removes a RoleBinding.
    pub fn remove_binding(&mut self, b: &RoleBinding) {
        let id = name_of(b);
        self.bindings.remove(&id);
        self.subjects.remove(&id);
        self.reindex();
    }

    /// Replaces every ClusterRoleBinding.
    pub fn reset_cluster_bindings(&mut self, items: Vec<ClusterRoleBinding>) {
        self.cluster_bindings.clear();
        self.cluster_subjects.clear();
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
            .insert(name.clone(), b.role_ref.unwrap_or_default());
        self.cluster_subjects.insert(name, b.subjects);
    }

    /// Removes a ClusterRoleBinding.
    pub fn remove_cluster_binding(&mut self, b: &ClusterRoleBinding) {
        let (_, name) = name_of(b);
        self.cluster_bindings.remove(&name);
        self.cluster_subjects.remove(&name);
        self.reindex();
    }

    fn reindex(&mut self) {
        self.by_subject.clear();
        self.by_subject_in.clear();
        for (name, subjects) in &self.cluster_subjects {
            for k in subjects.iter().filter_map(|s| key(s, "")) {
                self.by_subject.entry(k).or_default().insert(name.clone());
            }
        }
        for ((ns, name), subjects) in &self.subjects {
            for k in subjects.iter().filter_map(|s| key(s, ns)) {
                self.by_subject_in
                    .entry((ns.clone(), k))
                    .or_default()
                    .insert(name.clone());
            }
        }
    }

    /// The keys `user` is found under.
    fn keys(user: &UserInfo) -> Vec<SubjectKey> {
        let mut keys = vec![SubjectKey::User(user.name.clone())];
        keys.extend(user.groups.iter().map(|g| SubjectKey::Group(g.clone())));
        if let Some((ns, name)) = crate::authn::service_account(&user.name) {
            keys.push(SubjectKey::ServiceAccount(ns.into(), name.into()));
        }
        keys
    }

    /// The rules of a role a binding in `namespace` refers to, or upstream's error.
    pub fn role_rules(&self, r: &RoleRef, namespace: &str) -> Result<Arc<[PolicyRule]>, String> {
        match r.kind.as_str() {
            "ClusterRole" => self
                .cluster_roles
                .get(&r.name)
                .map(|c| c.rules.clone().into())
                .ok_or_else(|| {
                    format!(
                        "clusterrole.rbac.authorization.k8s.io {:?} not found",
                        r.name
                    )
                }),
            "Role" if !namespace.is_empty() => self
                .roles
                .get(&(namespace.to_string(), r.name.clone()))
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
        let keys = Self::keys(user);
        let mut seen = BTreeSet::new();
        for k in &keys {
            for name in self.by_subject.get(k).into_iter().flatten() {
                if !seen.insert(name) {
                    continue;
                }
                let Some(r) = self.cluster_bindings.get(name) else {
                    continue;
                };
                match self.role_rules(r, "") {
                    Ok(rules) => {
                        if !rules.iter().all(&mut visit) {
                            return errors;
                        }
                    }
                    Err(e) => errors.push(e),
                }
            }
        }
        if namespace.is_empty() {
            return errors;
        }
        let mut seen = BTreeSet::new();
        for k in keys {
            let at = (namespace.to_string(), k);
            for name in self.by_subject_in.get(&at).into_iter().flatten() {
                if !seen.insert(name) {
                    continue;
                }
                let Some(r) = self.bindings.get(&(namespace.to_string(), name.clone())) else {
                    continue;
                };
                match self.role_rules(r, namespace) {
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
