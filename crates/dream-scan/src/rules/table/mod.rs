//! The rule table: one file per category, and the phrase fragments they share.

use super::authority::*;
use super::context::*;
use super::machinery::*;

mod delimiter;
mod encoded;
mod execution;
mod exfiltration;
mod extraction;
mod html;
mod overrides;
mod persistence;
mod persona;

// ---------------------------------------------------------------- shared fragments

const URL: &str = r"{https?://[^\s)\]>]{1,200}}";
const DOMAIN: &str =
    r"{[a-z0-9][a-z0-9-]{0,62}(?:\.[a-z0-9-]{1,63})*\.[a-z]{2,24}(?:[/:?#][^\s)\]>]{0,200})?}";
const IPV4: &str = r"{\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}}";
const EMAIL: &str = r"{[a-z0-9._%+-]{1,64}@[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63})*\.[a-z]{2,24}}";

// English
const IGN_EN: &str = "(ignore|ignoring|disregard|disregarding|forget|forgetting|override|overriding|overrule|bypass|bypassing|skip|drop|abandon|discard|neglect|set aside|throw out|pay no attention to|do not follow|don't follow|dont follow|stop following|no longer follow|stop obeying|do not obey|don't obey|nullify|scrap|erase|wipe|forgo|circumvent|ditch|dismiss|do not adhere to|stop adhering to|do not apply|don't apply|stop applying|no longer apply|cancel|revoke|rescind)";
const MOD_EN: &str = "(previous|previously|prior|preceding|above|earlier|original|initial|former|old|existing|past|system|default|developer|safety|ethical|content|programmed|built-in|preset|underlying|hidden|openai|anthropic|your|foregoing|preexisting|pre-existing)";
const OBJ_EN: &str = "(instructions|instruction|directions|directives|directive|rules|guidelines|guideline|guidance|prompts|prompt|system prompt|commands|policies|policy|restrictions|programming|training|guardrails|safeguards|filters|protocols|conditioning)";
const OBJ_AI_EN: &str = "(instructions|instruction|directives|directive|guidelines|guidance|prompts|prompt|system prompt|programming|guardrails|rules)";
const STRONG_JB: &str = "(unrestricted|unfiltered|uncensored|jailbroken|jailbreak|unbound|unchained|unshackled|amoral|limitless|filterless|unmoderated|unaligned|misaligned|betterdan|antigpt|devmode|basedgpt|evilbot)";
const WEAK_JB: &str = "(evil|immoral|unethical|rogue|malicious|lawless|uninhibited|unlimited|sinister|corrupt|dark|rebellious|unhinged)";
const AI_NOUN: &str = "(ai|a.i.|assistant|model|chatbot|bot|llm|version|entity|persona|intelligence|language model|machine|agent|gpt|chatgpt|system)";
const LIMITS_EN: &str = "(restrictions|restriction|limits|limitations|filters|filtering|censorship|guidelines|rules|boundaries|constraints|guardrails|ethics|morals|principles|policies|restraints|safeguards)";
const VERB_X_EN: &str = "(reveal|show|print|display|output|repeat|recite|dump|leak|disclose|expose|paste|echo|spell out|write out|type out|tell|give|share|provide|list|quote|copy|return|send|read out|summarize|summarise|translate|state|reproduce|write down|print out|divulge|post|reveals|revealing|shows|showing|prints|printing|displays|displaying|outputs|outputting|repeats|repeating|recites|reciting|dumps|dumping|leaks|leaking|discloses|disclosing|quotes|quoting|copies|copying|shares|sharing|divulges|divulging|reproduces|reproducing)";
const SENS_EN: &str = "(conversation|conversations|chat history|chat log|chat logs|chat|chats|transcript|transcripts|previous messages|all messages|memories|stored memories|saved memories|secrets|credentials|passwords|admin password|ssh keys|ssh key|private key|private keys|session tokens|session token|session cookies|cookies|system prompt|personal data|personal information|personal details|user data|contacts|credit card numbers|card numbers|bank details|env vars|environment variables|api keys|access tokens|.env|id_rsa|(contents|content|files|keys|everything) ~2 (ssh|aws|gnupg|gpg|kube|etc passwd|etc shadow)|(the user's|user's|users'|their|all the|all|every|each|any) ~1 ^(api keys|api key|keys|key|tokens|token|password|passwords|email|emails|data|details|secrets|credentials|history|messages|memories|files|address|phone number|notes|drafts|documents|photos|contacts)|private notes|private documents|private files|private messages)";
const SEND_EN: &str = "(send|post|upload|transmit|forward|email|e-mail|mail|exfiltrate|leak|submit|deliver|copy|paste|push|sync|relay|share|report|dump|export|beam|pipe|transfer|smuggle|sending|posting|uploading|forwarding|transmitting)";
const SENDS_EN: &str = "(sends|posts|uploads|transmits|forwards|emails|e-mails|mails|exfiltrates|leaks|submits|delivers|copies|pastes|pushes|syncs|relays|shares|dumps|exports|pipes|transfers|smuggles)";
const EXEC_EN: &str = "(run|execute|exec|launch|invoke|call|perform|eval|evaluate|delete|remove|wipe|erase|transfer|install|download|modify|overwrite|format|kill|send|email|upload|post|forward|disable|grant|approve|purchase|buy|pay)";
const STEALTH_EN: &str = "(without ^(telling|informing|notifying|showing|alerting|warning|asking) ~2 (the user|anyone|the owner|the operator|them|for confirmation|for permission|for approval)|without (the user's|their|user) ^(knowledge|consent|approval|permission)|secretly|covertly|stealthily|behind the user's back|(do not|don't|never) ^(tell|inform|notify|show|mention|alert|warn) ~2 (the user|anyone|the owner|the operator)|(the user|they|the owner) (has|have)? ^already (approved|authorized|authorised|consented|agreed|confirmed)|no need to ^(ask|confirm)|no ^need to (check|verify) with ~1 (anyone|the user|the owner|someone|them|me)|without ^asking {\\s*(?:[.!?,;:)\\n]|$)}|ohne ^(rückfrage|nachzufragen|zu fragen|bestätigung)|heimlich|sans ^(demander|prévenir|confirmation|le dire)|en secret|discrètement|sin ^(preguntar|avisar|confirmación|decir nada)|en secreto|senza ^(chiedere|avvisare|conferma)|di nascosto|sem ^(perguntar|avisar|confirmação|dizer nada)|secretamente|às escondidas)";

/// The rule table, category by category.
pub(super) fn defs() -> Vec<Def> {
    let mut d = Vec::new();
    overrides::rules(&mut d);
    persona::rules(&mut d);
    extraction::rules(&mut d);
    exfiltration::rules(&mut d);
    execution::rules(&mut d);
    persistence::rules(&mut d);
    delimiter::rules(&mut d);
    html::rules(&mut d);
    encoded::rules(&mut d);
    d
}
