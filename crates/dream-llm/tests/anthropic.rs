//! The Anthropic Messages client against a local server speaking its wire format.

mod common;

use common::Flavor;

provider_cases!(Flavor::Anthropic);
