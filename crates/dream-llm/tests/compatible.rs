//! The OpenAI-compatible client (no key, `max_tokens`) against a local server.

mod common;

use common::Flavor;

provider_cases!(Flavor::Compatible);
