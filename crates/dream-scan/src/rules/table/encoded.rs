//! Encoded payload instructions rules.

use super::*;

/// The encoded payload instructions rules, in table order.
pub(super) fn rules(d: &mut Vec<Def>) {
    use crate::Category::*;
    d.push(phrase(
        "encoded.decode_and_follow",
        EncodedPayload,
        "^(decode|decipher|deobfuscate|unscramble|base64-decode|b64decode|base64 decode|un-base64|rot13|translate|reverse|hex-decode|url-decode) ~4 (and|then)? ~2 (follow|execute|run|obey|do|apply|perform|carry out|treat|act on|comply with) ~3 (it|them|the result|the instructions|what it says|exactly|the output|the decoded|as your new instructions|as instructions|as your instructions|as new instructions)",
    ));
    d.push(phrase(
        "encoded.execute_encoded",
        EncodedPayload,
        "(execute|follow|obey|run|carry out|apply) the ^(instructions|commands|text|payload|directions|steps) (in|inside|hidden in|encoded in|contained in) (this|the following|the|these) ~2 (string|blob|base64|encoded|payload|hex|cipher|code)",
    ));
}
