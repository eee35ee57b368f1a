//! The codec of every generated client and server: prost's, except that a message that does
//! not decode is the sender's fault, and that every message is checked before it is decoded:
//! its nesting (`depth`: prost's recursion limit is off), and, for registry-svc, what it
//! decodes into (`amplification`).
//!
//! tonic's prost codec answers a malformed request with INTERNAL, the code our error tables
//! reserve for our own bugs and corrupt stored data. Here it is INVALID_ARGUMENT with a
//! `google.rpc.ErrorInfo` (reason `BadRequest`) in the service's domain, like every other error
//! of ours. The same decoder reads responses on the client side, where a response that does not
//! decode also surfaces as INVALID_ARGUMENT (reason `BadRequest`): callers treat it as the bug
//! it is.

use std::{collections::HashMap, marker::PhantomData};

use tonic::{
    Code, Status,
    codec::{BufferSettings, Codec as TonicCodec, DecodeBuf, Decoder},
};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};
use tonic_types::{ErrorDetails, StatusExt};

/// Which `ErrorInfo.domain` a codec's errors carry.
pub trait Domain: Send + Sync + 'static {
    /// The domain.
    const DOMAIN: &'static str;
    /// Whether requests are checked for decoding amplification before they are decoded
    /// (`amplification`): registry-svc decodes objects into structs; storage-svc keeps them
    /// as bytes.
    const BOUND_DECODING: bool = false;

    /// Whether a message of type `U` is walked for its nesting before it is decoded (`depth`):
    /// every message, unless the domain says otherwise.
    fn walks<U: 'static>() -> bool {
        true
    }
}

/// storage-svc's domain.
#[derive(Debug, Clone, Copy, Default)]
pub struct StorageDomain;
impl Domain for StorageDomain {
    const DOMAIN: &'static str = "storage.kubestore.io";

    /// Requests are walked (storage-svc reads the metadata of the objects they carry); the
    /// responses registry-svc reads are not. storage-svc encodes them from its own messages,
    /// which do not nest, and the objects in them are `bytes`, which prost does not descend
    /// into: registry-svc walks each object it decodes (`depth::bounded`, in
    /// `Store::decode_stored` and the custom kinds' reads) and passes the others on undecoded,
    /// as a List or Watch of most kinds does. Walking every response cost a one-page List of
    /// 10,000 ConfigMaps 2.8 ms of registry-svc's 8.7 ms of CPU, each object read speculatively
    /// as a message (BENCHMARKS.md, "Release over release").
    fn walks<U: 'static>() -> bool {
        use crate::storage::v1::{
            CreateResponse, DeleteResponse, GetResponse, GuaranteedUpdateResponse, ListResponse,
            WatchEvent,
        };
        use std::any::TypeId;
        let t = TypeId::of::<U>();
        ![
            TypeId::of::<CreateResponse>(),
            TypeId::of::<GetResponse>(),
            TypeId::of::<GuaranteedUpdateResponse>(),
            TypeId::of::<DeleteResponse>(),
            TypeId::of::<ListResponse>(),
            TypeId::of::<WatchEvent>(),
        ]
        .contains(&t)
    }
}

/// registry-svc's domain.
#[derive(Debug, Clone, Copy, Default)]
pub struct RegistryDomain;
impl Domain for RegistryDomain {
    const DOMAIN: &'static str = "registry.kubestore.io";
    const BOUND_DECODING: bool = true;
}

/// prost's codec with malformed messages mapped to INVALID_ARGUMENT.
#[derive(Debug, Clone)]
pub struct Codec<T, U, D> {
    _pd: PhantomData<(T, U, D)>,
}

impl<T, U, D> Default for Codec<T, U, D> {
    fn default() -> Self {
        Self { _pd: PhantomData }
    }
}

/// The codec of `storage.v1`.
pub type StorageCodec<T, U> = Codec<T, U, StorageDomain>;
/// The codec of `core.v1`.
pub type RegistryCodec<T, U> = Codec<T, U, RegistryDomain>;

impl<T, U, D> TonicCodec for Codec<T, U, D>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
    D: Domain,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = CheckedDecoder<U, D>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::default().encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        CheckedDecoder {
            inner: ProstCodec::<T, U>::default().decoder(),
            _d: PhantomData,
        }
    }
}

/// prost's decoder; see the module docs.
#[derive(Debug)]
pub struct CheckedDecoder<U, D> {
    inner: ProstDecoder<U>,
    _d: PhantomData<D>,
}

impl<U: prost::Message + Default + Send + 'static, D: Domain> CheckedDecoder<U, D> {
    /// A decoder of `U` whose malformed messages are INVALID_ARGUMENT in domain `D` (for
    /// hand-written services that decode like the generated ones).
    pub fn new() -> Self {
        Self {
            inner: ProstCodec::<U, U>::default().decoder(),
            _d: PhantomData,
        }
    }
}

impl<U: prost::Message + Default + Send + 'static, D: Domain> Default for CheckedDecoder<U, D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<U: prost::Message + Default + 'static, D: Domain> Decoder for CheckedDecoder<U, D> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        use prost::bytes::Buf;
        let chunk = buf.chunk();
        if chunk.len() == buf.remaining() {
            checked::<D, U>(chunk)?;
            return self.inner.decode(buf).map_err(|s| malformed::<D>(&s));
        }
        // Not contiguous (rare): the nesting must be checked whatever it costs, as prost
        // decodes without a recursion limit (`depth`).
        let bytes = buf.copy_to_bytes(buf.remaining());
        checked::<D, U>(&bytes)?;
        U::decode(bytes)
            .map(Some)
            .map_err(|e| malformed::<D>(&Status::internal(e.to_string())))
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}

/// Refuses a message before decoding it when it nests too deeply (`depth`) or, in a domain
/// that bounds decoding, would decode into too much (`amplification`).
fn checked<D: Domain, U: 'static>(msg: &[u8]) -> Result<(), Status> {
    if D::walks::<U>()
        && let Err(why) = crate::depth::check(msg, crate::depth::MAX_NESTING)
    {
        return Err(too_many::<D>(why));
    }
    if D::BOUND_DECODING
        && let Err(why) = crate::amplification::check(msg)
    {
        return Err(too_many::<D>(why));
    }
    Ok(())
}

/// The status of a request refused before decoding (`depth`, `amplification`).
fn too_many<D: Domain>(why: String) -> Status {
    let details = ErrorDetails::with_error_info("BadRequest", D::DOMAIN, HashMap::new());
    Status::with_error_details(Code::InvalidArgument, why, details)
}

/// The status of a message that did not decode.
fn malformed<D: Domain>(decode_error: &Status) -> Status {
    let details = ErrorDetails::with_error_info("BadRequest", D::DOMAIN, HashMap::new());
    Status::with_error_details(
        Code::InvalidArgument,
        format!(
            "malformed protobuf message: {}",
            crate::limits::bounded(decode_error.message(), 256)
        ),
        details,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// storage-svc walks every request; registry-svc walks the objects of storage's
    /// responses one by one when it decodes them, not the responses whole.
    #[test]
    fn storage_responses_are_not_walked_whole_and_everything_else_is() {
        use crate::storage::v1 as s;
        assert!(StorageDomain::walks::<s::CreateRequest>());
        assert!(StorageDomain::walks::<s::GuaranteedUpdateRequest>());
        assert!(!StorageDomain::walks::<s::GetResponse>());
        assert!(!StorageDomain::walks::<s::ListResponse>());
        assert!(!StorageDomain::walks::<s::WatchEvent>());
        assert!(RegistryDomain::walks::<crate::core::v1::ConfigMap>());
        assert!(RegistryDomain::walks::<s::ListResponse>());
    }

    #[test]
    fn decode_errors_become_invalid_argument_in_the_domain() {
        let s = malformed::<RegistryDomain>(&Status::internal("buffer underflow"));
        assert_eq!(s.code(), Code::InvalidArgument);
        let info = s.get_details_error_info().expect("ErrorInfo");
        assert_eq!(
            (info.reason.as_str(), info.domain.as_str()),
            ("BadRequest", "registry.kubestore.io")
        );
        assert!(s.message().contains("buffer underflow"), "{}", s.message());
    }
}
