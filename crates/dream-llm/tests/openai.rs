//! The OpenAI Chat Completions client against a local server speaking its wire format.

mod common;

use common::Flavor;

provider_cases!(Flavor::OpenAi);
