//! A configuration value that cannot be used: the key it is under (to point at its
//! line) and why, in one line for the user.

/// A value of the config file that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InvalidSetting {
    /// The key, as the config file writes it.
    pub key: &'static str,
    /// Why its value cannot be used.
    pub message: String,
}

impl InvalidSetting {
    /// `key`'s value is wrong, for the reason `message` gives.
    pub fn new(key: &'static str, message: impl Into<String>) -> Self {
        InvalidSetting {
            key,
            message: message.into(),
        }
    }
}
