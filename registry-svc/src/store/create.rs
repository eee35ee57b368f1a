//! Create (upstream's `Store.Create` and `rest.BeforeCreate`): system fields, generateName with
//! retries on a clash, mutating admission, the strategy's PrepareForCreate, validation and
//! Canonicalize, on the object as the kind's defaults complete it (`Strategy::default_object`),
//! then validating admission.

use crate::{
    admission::Operation,
    error::ApiError,
    names::GENERATE_NAME_ATTEMPTS,
    resource::{MetaExt, Resource},
    store::graceful::now,
    store::{Ctx, Store},
    validation,
};

impl<R: Resource> Store<R> {
    /// `rest.BeforeCreate`: namespace, PrepareForCreate, Validate (+ ObjectMeta), Canonicalize.
    pub(crate) fn before_create(&self, ns: &str, obj: &mut R) -> Result<(), ApiError> {
        let _span = tracing::info_span!("BeforeCreate", kind = self.kind()).entered();
        self.reconcile_namespace(ns, obj.meta_mut())?;
        self.strategy.prepare_for_create(obj);
        {
            let _span = tracing::info_span!("Validate", kind = self.kind()).entered();
            let mut v = self.strategy.validate(obj);
            let s = &self.strategy;
            validation::object_meta(obj.meta_mut(), s.namespace_scoped(), s.name_rule(), &mut v);
            self.invalid(obj, v)?;
        }
        self.strategy.canonicalize(obj);
        Ok(())
    }

    /// Create, retrying a generated name up to [`GENERATE_NAME_ATTEMPTS`] times on a clash.
    pub async fn create(
        &self,
        ctx: Ctx,
        namespace: &str,
        obj: R,
        dry_run: bool,
    ) -> Result<R, ApiError> {
        crate::store::scoped(
            &ctx.clone(),
            self.create_named(ctx, namespace, obj, dry_run),
        )
        .await
    }

    async fn create_named(
        &self,
        ctx: Ctx,
        namespace: &str,
        mut obj: R,
        dry_run: bool,
    ) -> Result<R, ApiError> {
        // Upstream defaults the request body as it decodes it, before any hook or strategy.
        self.strategy.default_object(&mut obj);
        let meta = obj.meta().cloned().unwrap_or_default();
        if meta.generate_name.is_empty() || !meta.name.is_empty() {
            return self.create_once(ctx, namespace, obj, dry_run).await;
        }
        for _ in 0..GENERATE_NAME_ATTEMPTS {
            match self
                .create_once(ctx.clone(), namespace, obj.clone(), dry_run)
                .await
            {
                Err(ApiError::AlreadyExists { .. }) => continue,
                other => return other,
            }
        }
        Err(ApiError::AlreadyExists {
            resource: self.resource().into(),
            name: meta.generate_name.clone(),
            message: format!(
                "{} with generateName {:?} already exists, the server was not able to generate a unique name for the object",
                self.resource(),
                meta.generate_name
            ),
        })
    }

    async fn create_once(
        &self,
        ctx: Ctx,
        namespace: &str,
        mut obj: R,
        dry_run: bool,
    ) -> Result<R, ApiError> {
        let ns = self
            .request_namespace(namespace, obj.meta_mut().namespace.as_str())?
            .to_string();
        {
            // FillObjectMetaSystemFields: whatever the client sent is overwritten.
            let m = obj.meta_mut();
            m.uid = uuid::Uuid::new_v4().to_string();
            m.creation_timestamp = Some(now());
            m.deletion_timestamp = None;
            m.deletion_grace_period_seconds = None;
            if m.name.is_empty() && !m.generate_name.is_empty() {
                m.name = self.strategy.generate_name(&m.generate_name);
            }
        }
        // The hooks see the namespace the object is written to (a body may leave it out).
        self.reconcile_namespace(&ns, obj.meta_mut())?;
        // A create's audit events name the object, as upstream's `LogRequestObject` does.
        if let Some(record) = &ctx.caller.audit {
            record.named(&ns, obj.name());
        }
        self.strategy.begin_create(&obj, dry_run)?;
        let result = self.create_stored(ctx, &ns, &mut obj, dry_run).await;
        self.strategy.finish_create(&obj, result.is_ok());
        let mut out = result?;
        self.strategy.after_create(&out, dry_run);
        self.strategy.decorate(&mut out);
        Ok(out)
    }

    async fn create_stored(
        &self,
        ctx: Ctx,
        ns: &str,
        obj: &mut R,
        dry_run: bool,
    ) -> Result<R, ApiError> {
        // The writer's fields first, then mutating admission, as upstream's create handler
        // runs both before the Store: neither admission's changes nor the strategy's are
        // credited to the writer.
        let name = obj.name().to_string();
        self.track(None, obj, &ctx.manager(), crate::store::update::Part::Main)?;
        self.mutate(Operation::Create, "", ns, &name, obj, None, dry_run)
            .await?;
        self.before_create(ns, obj)?;
        self.storage
            .lifecycle
            .admit_create(self.resource(), &name, ns)?;
        self.admit(Operation::Create, "", ns, &name, Some(obj), None, dry_run)?;
        self.admit_waiting(Operation::Create, "", ns, &name, Some(obj), None, dry_run)
            .await?;
        let key = self.key(ns, &name)?;
        let ttl = self.strategy.ttl_seconds(obj).unwrap_or(0);
        let encoded = obj.encode_to_vec();
        self.check_size(&key, &name, &encoded)?;
        match self
            .storage
            .create(ctx.deadline, key.clone(), encoded, ttl, dry_run)
            .await
        {
            Ok(bytes) => self.decode(&bytes),
            Err(status) => {
                let mut err = self.storage_error(&status, &name);
                if let ApiError::AlreadyExists { message, .. } = &mut err {
                    // Say so when the name is held by an object on its way out.
                    if let Ok(Some(existing)) = self.storage.get(ctx.deadline, key, true).await
                        && self
                            .decode(&existing)
                            .ok()
                            .and_then(|e| e.meta().and_then(|m| m.deletion_timestamp))
                            .is_some()
                    {
                        *message = format!("object is being deleted: {message}");
                    }
                }
                Err(err)
            }
        }
    }
}
