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
}

/// storage-svc's domain.
#[derive(Debug, Clone, Copy, Default)]
pub struct StorageDomain;
impl Domain for StorageDomain {
    const DOMAIN: &'static str = "storage.kubestore.io";
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

impl<U: prost::Message + Default, D: Domain> Decoder for CheckedDecoder<U, D> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        use prost::bytes::Buf;
        let chunk = buf.chunk();
        if chunk.len() == buf.remaining() {
            checked::<D>(chunk)?;
            return self.inner.decode(buf).map_err(|s| malformed::<D>(&s));
        }
        // Not contiguous (rare): the nesting must be checked whatever it costs, as prost
        // decodes without a recursion limit (`depth`).
        let bytes = buf.copy_to_bytes(buf.remaining());
        checked::<D>(&bytes)?;
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
fn checked<D: Domain>(msg: &[u8]) -> Result<(), Status> {
    if let Err(why) = crate::depth::check(msg, crate::depth::MAX_NESTING) {
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
