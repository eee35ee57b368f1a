//! The codec of every generated client and server: prost's, except that a message that does
//! not decode is the sender's fault.
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
        if D::BOUND_DECODING {
            use prost::bytes::Buf;
            let chunk = buf.chunk();
            if chunk.len() == buf.remaining()
                && let Err(why) = crate::amplification::check(chunk)
            {
                return Err(too_many::<D>(why));
            }
        }
        self.inner.decode(buf).map_err(|s| malformed::<D>(&s))
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}

/// The status of a request refused before decoding (`amplification`).
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
