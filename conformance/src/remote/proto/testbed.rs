//! The testbed's own methods: the create request it builds, provider IDs and
//! placements it names.

use super::*;

/// `testbed/request` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RequestParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The instance name.
    pub name: String,
    /// The tag.
    pub tag: String,
    /// Where to place it.
    pub location: WireLocation,
}

/// [`CreateRequest`], with the cloud-init payload in clear: the provider must write it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WireCreateRequest {
    /// The idempotency key.
    pub name: String,
    /// The owner's id.
    pub uid: String,
    /// The garbage-collection mark.
    pub tag: String,
    /// A zone the configuration maps to a location.
    pub placement: String,
    /// An image name; `null` means the provider's default.
    pub image: Option<String>,
    /// The secret cloud-init user data, in clear.
    pub cloud_init: String,
}

impl std::fmt::Debug for WireCreateRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireCreateRequest")
            .field("name", &self.name)
            .field("uid", &self.uid)
            .field("tag", &self.tag)
            .field("placement", &self.placement)
            .field("image", &self.image)
            .field(
                "cloud_init",
                &format_args!("<redacted {} bytes>", self.cloud_init.len()),
            )
            .finish()
    }
}

impl From<&CreateRequest> for WireCreateRequest {
    fn from(r: &CreateRequest) -> Self {
        WireCreateRequest {
            name: r.name.clone(),
            uid: r.uid.clone(),
            tag: r.tag.clone(),
            placement: r.placement.clone(),
            image: r.image.clone(),
            cloud_init: r.cloud_init.expose().to_owned(),
        }
    }
}

impl From<WireCreateRequest> for CreateRequest {
    fn from(r: WireCreateRequest) -> Self {
        CreateRequest {
            name: r.name,
            uid: r.uid,
            tag: r.tag,
            placement: r.placement,
            image: r.image,
            cloud_init: CloudInit::new(r.cloud_init),
        }
    }
}

/// `testbed/id_for` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IdForParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The location.
    pub location: String,
    /// The instance name.
    pub name: String,
}

/// The result of `testbed/id_for` and `testbed/unconfigured_id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IdResult {
    /// The provider ID.
    pub id: String,
}

/// `testbed/location_of` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocationOfParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The ID.
    pub id: String,
}

/// `testbed/location_of` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocationOfResult {
    /// The location, or `null` when the ID is not well formed.
    pub location: Option<String>,
}

/// `testbed/malformed_ids` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MalformedIdsResult {
    /// IDs the provider must reject as malformed.
    pub ids: Vec<String>,
}

/// `testbed/unconfigured_id` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UnconfiguredIdParams {
    /// The testbed.
    pub testbed: TestbedHandle,
    /// The instance name.
    pub name: String,
}

/// `testbed/unknown_placement` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UnknownPlacementResult {
    /// A placement the configuration does not map.
    pub placement: String,
}
