//! A configuration value that cannot be used: the key it is under (to point at its
//! line) and why, in one line for the user.

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InvalidSetting {
    pub key: &'static str,
    pub message: String,
}

impl InvalidSetting {
    pub fn new(key: &'static str, message: impl Into<String>) -> Self {
        InvalidSetting {
            key,
            message: message.into(),
        }
    }
}
