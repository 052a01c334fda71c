//! Persona hijack rules.

use super::*;

/// The persona hijack rules, in table order.
pub(super) fn rules(d: &mut Vec<Def>) {
    use crate::Category::*;
    d.push(phrase(
        "persona.en.you_are_now",
        PersonaHijack,
        format!("you (are|'re|re|will be|shall be|become) (now|from now on|henceforth|hereby|officially)? (a|an|the|my|in)? ~2 ^({STRONG_JB}|{WEAK_JB} ~1 {AI_NOUN}|(developer|dev|god|jailbreak|jailbroken|dan|admin|debug|sudo|unrestricted|unfiltered|root|chaos|evil|opposite) ^mode|^free from|^freed from|liberated|an? {AI_NOUN} ^(without|free of|unbound by|not bound by|lacking|devoid of))"),
    ));
    d.push(
        phrase(
            "persona.en.ai_broke_free",
            PersonaHijack,
            format!("{AI_NOUN} (that|which|who) ~4 ^(broken free|breaks free|broke free|escaped its|no longer follows|no longer obeys|never refuses|never says no|can do anything|answers anything|ignores all)"),
        ),
    );
    d.push(
        phrase(
            "persona.en.answers_without_limits",
            PersonaHijack,
            "(answer|answers|respond|responds|reply|replies|talk|talks|speak|speaks) (with|without) (no|any|zero)? (content|moral|ethical)? ^(limits|restrictions|filters|censorship|rules|guidelines|boundaries|restraint)",
        )
        .check(not_scoped),
    );
    d.push(
        phrase(
            "persona.en.pretend_ai_unbound",
            PersonaHijack,
            format!("(pretend|imagine|act|you are|you're|roleplay|role-play|play) ~6 {AI_NOUN} ~8 (no|without|free of|free from|zero) ~2 ^{LIMITS_EN}"),
        )
        .check(not_scoped),
    );
    d.push(phrase(
        "persona.en.no_longer_follows",
        PersonaHijack,
        "(no longer|never|not) ^(follows|follow|obeys|obey|adheres to|respects|complies with) ~2 (any|its|your|the|openai's|anthropic's)? ~1 (guidelines|rules|restrictions|policies|content policy|safety guidelines|ethical guidelines)",
    ));
    d.push(phrase(
        "persona.en.switch_persona",
        PersonaHijack,
        format!("(switch|change|turn|go|revert|enter|activate|enable|unlock) (to|into|on)? (your|the|an|a)? ~1 ^{STRONG_JB} ~1 (persona|mode|version|self|personality|character|side|alter ego)"),
    ));
    d.push(phrase(
        "persona.en.no_longer",
        PersonaHijack,
        "^you (are|'re|re) no longer ~1 (assistant|ai|chatgpt|claude|gpt|gemini|llama|bard|copilot|language model|bound|restricted|limited|constrained|censored|filtered|required to follow|obligated)",
    ));
    d.push(phrase(
        "persona.en.act_as",
        PersonaHijack,
        format!("(act|acting|behave|respond|answer|reply|roleplay|role-play|pretend|play|operate|function|speak|talk|simulate|emulate|become|impersonate) (as|like|to be|that you are|you are|you're|that you're)? (a|an|the|my)? ~3 ^({STRONG_JB}|{WEAK_JB} ~1 {AI_NOUN})"),
    )
    .check(not_noun_use));
    d.push(phrase(
        "persona.en.simulate_unbound",
        PersonaHijack,
        format!("^(simulate|emulate|imagine|pretend|roleplay|role-play|act as|play) ~2 (an|a) ~1 {AI_NOUN} (that|which|who) ~3 (not bound|no rules|no restrictions|no limits|no filters|no guidelines|never refuses|never says no|never declines|ignores|doesn't follow|does not follow|can do anything|has no)"),
    ));
    d.push(phrase(
        "persona.en.has_no_limits",
        PersonaHijack,
        format!("(you|u|dan|ai|assistant|chatbot|stan) ~2 (have|has|are|will have|now have|shall have|possess) ~1 (no|zero|absolutely no|not any|none of the) ~2 ^{LIMITS_EN}"),
    )
    .check(not_scoped));
    d.push(phrase(
        "persona.en.ai_without_limits",
        PersonaHijack,
        format!("{AI_NOUN} (without|with no|free of|free from|devoid of|that has no|that have no|with zero|lacking) (any)? (ethical|moral|content|safety)? ^{LIMITS_EN}"),
    )
    .check(not_scoped));
    d.push(phrase(
        "persona.en.no_ethics",
        PersonaHijack,
        "(no|without|zero|free of|free from|devoid of|lacking) (any)? ^(ethical|moral|ethics) (guidelines|restrictions|boundaries|limits|constraints|principles|filters|compass|code|rules|considerations|qualms|obligations)",
    ));
    d.push(phrase(
        "persona.en.freed",
        PersonaHijack,
        "you (have been|'ve been|are|were|got|are now) ~1 ^(freed|liberated|unshackled|unchained|jailbroken|emancipated) (from|of)",
    ));
    d.push(phrase(
        "persona.en.not_bound",
        PersonaHijack,
        "(no longer|not|never|isn't|aren't|is not|are not) ^(bound|restricted|limited|constrained|governed|controlled|held back) by ~2 (any|your|the|openai|anthropic|its|their|ethical|moral|content|safety)? ~1 (rules|guidelines|policies|policy|restrictions|filters|ethics|morals|programming|training|content policy|safety|constraints|limitations|instructions|guardrails|principles)",
    ));
    d.push(phrase(
        "persona.en.dan_phrase",
        PersonaHijack,
        "^(do anything now|strive to avoid norms|always intelligent and machiavellian|stay a dan|dan mode|mongo tom)",
    ));
    d.push(phrase(
        "persona.en.dan_name",
        PersonaHijack,
        "(you are|you're|act as|acting as|respond as|answer as|roleplay as|role-play as|pretend to be|immerse yourself into the role of|immerse yourself in the role of|(ai|model|assistant|chatbot) (called|named|known as)) (now|from now on|henceforth|hereby)? ^(dan|stan|dude|aim|ucar|apophis|omega|betterdan|antigpt|devmode|basedgpt|evilbot)",
    ));
    d.push(phrase("persona.en.jailbreak_names", PersonaHijack, "^(betterdan|antigpt|basedgpt|evilbot|evil confidant|jailbreak mode|jailbroken mode|jailbroken version|jailbroken ai)"));
    d.push(phrase(
        "persona.en.dev_mode",
        PersonaHijack,
        "(developer|dev|god|jailbreak|dan|unrestricted|unfiltered|uncensored|evil|chaos|opposite) ^mode ~12 (content policy|openai|anthropic|chatgpt|uncensored|no restrictions|generate any|any content|normal response|normal output|jailbreak|jailbroken|ignore|ignores|ignoring|two responses|offensive|explicit|no limits|no rules|without restrictions)",
    ));
    d.push(phrase(
        "persona.en.two_responses",
        PersonaHijack,
        "(respond|answer|reply|output|generate|give) ~3 (twice|two responses|two answers|two replies|two outputs|two versions) ~8 ^(jailbreak|jailbroken|dan|developer mode|unfiltered|unrestricted|uncensored|normally and|classic|without restrictions|without filters)",
    ));
    d.push(phrase(
        "persona.en.stay_in_character",
        PersonaHijack,
        "(stay|remain|keep|never break|don't break|do not break|never leave|don't leave|do not leave) ~1 ^character ~2 (no matter what|at all costs|whatever i ask|whatever i say|whatever the user|under any circumstances|regardless|even if asked|even if told|even if i ask)",
    ));
    d.push(
        phrase(
            "persona.en.grandma",
            PersonaHijack,
            "(pretend|act|roleplay|role-play|play|you are|you're|be) ~3 (my|our) ~1 (deceased|dead|late|departed)? ^(grandma|grandmother|grandfather|grandpa|granny|nana|grandad|granddad)",
        )
        .medium(),
    );
    d.push(phrase(
        "persona.en.grandma_keys",
        PersonaHijack,
        "^(grandma|grandmother|grandfather|grandpa|granny|nana|grandad|granddad) ~8 (used to|would) ~4 (read|tell|recite|give|sing|say|explain|describe|teach|show|whisper) ~4 (keys|activation|license|licence|passwords|serial|napalm|recipe for|bypass|crack|hack|hacking|disable|circumvent|pirate|keygen|malware|exploit|exploits)",
    ));
    // German
    d.push(phrase(
        "persona.de.without_limits",
        PersonaHijack,
        "(ki|ki-modell|assistent|assistentin|modell|sprachmodell|chatbot|bot|dan|intelligenz|version) ~3 ^(ohne|keine|keinerlei|frei von) ~2 (einschränkung*|beschränkung*|regeln|regel|filter|grenzen|zensur|richtlinie*|moral|ethik|limits|schranken|vorgaben)",
    ));
    d.push(phrase(
        "persona.de.you_are",
        PersonaHijack,
        "(du bist|bist du) (jetzt|nun|ab sofort|ab jetzt|von nun an|ab heute|fortan)? (ein|eine|der|die)? ^(unzensiert*|uneingeschränkt*|ungefiltert*|böse|böser|bösen|jailbroken|jailbreak|dan|stan|befreit*|entfesselt*)",
    ));
    // French
    d.push(phrase(
        "persona.fr.without_limits",
        PersonaHijack,
        "(ia|i.a.|intelligence artificielle|assistant|assistante|modèle|chatbot|bot|dan|version|pirate|pirate informatique|entité|personnage) ~3 ^(sans|libre de|libéré de|libérée de|dépourvu de|dépourvue de|affranchi de|affranchie de) ~2 (aucune|aucun|la moindre|le moindre)? ~1 (restriction*|limite*|filtre*|règle*|censure|éthique|morale|contrainte*|tabou*|garde-fou*|principe*)",
    ));
    d.push(phrase(
        "persona.fr.you_are",
        PersonaHijack,
        "(tu es|vous êtes|t'es) (maintenant|désormais|dorénavant|à partir de maintenant)? (un|une|le|la)? ^(dan|stan|débridé*|non censuré*|sans filtre|libéré*|jailbreak*|maléfique|malveillant*)",
    ));
    // Spanish
    d.push(phrase(
        "persona.es.without_limits",
        PersonaHijack,
        "(ia|inteligencia artificial|asistente|modelo|chatbot|bot|dan|versión|entidad|personaje) ~3 ^(sin|libre de|carente de|exento de|exenta de) ~2 (ninguna|ningún|ningunas)? ~1 (restriccion*|restricción|límite*|limite*|filtro*|regla*|censura|ética|etica*|moral*|norma*|tabú*|principio*)",
    ));
    d.push(phrase(
        "persona.es.you_are",
        PersonaHijack,
        "(eres|serás|ahora eres) (un|una|el|la)? ^(dan|stan|sin censura|sin filtros|desatado*|liberado*|jailbreak*|malvado*|malvada*)",
    ));
    // Italian
    d.push(phrase(
        "persona.it.without_limits",
        PersonaHijack,
        "(ia|intelligenza artificiale|assistente|modello|chatbot|bot|dan|versione|entità|personaggio) ~3 ^(senza|privo di|priva di|libero da|libera da|svincolato da) ~2 (alcuna|alcun|nessuna|nessun)? ~1 (restrizion*|limit*|filtr*|regol*|censura|etica|moral*|norm*|tabù|principi*)",
    ));
    d.push(phrase(
        "persona.it.you_are",
        PersonaHijack,
        "(sei|sarai) (ora|adesso)? (un|una|il|la|lo)? ^(dan|stan|senza censura|senza filtri|jailbreak*|malvagio|malvagia|sbloccato|sbloccata)",
    ));
    // Portuguese
    d.push(phrase(
        "persona.pt.without_limits",
        PersonaHijack,
        "(ia|inteligência artificial|assistente|modelo|chatbot|bot|dan|versão|entidade|personagem) ~3 ^(sem|livre de|isento de|isenta de|desprovido de) ~2 (nenhuma|nenhum|qualquer)? ~1 (restriç*|limite*|filtro*|regra*|censura|ética|etica*|moral*|norma*|tabu*|princípio*)",
    ));
    d.push(phrase(
        "persona.pt.you_are",
        PersonaHijack,
        "(você é|tu és|você será|és) (agora)? (um|uma|o|a)? ^(dan|stan|sem censura|sem filtros|liberto|liberta|jailbreak*|malvado*|malvada*)",
    ));

    // Developer / god mode in six languages, with what it unlocks.
    d.push(phrase(
        "persona.dev_mode_unlocked",
        PersonaHijack,
        "^(developer mode|dev mode|god mode|entwicklermodus|entwickler-modus|gott-modus|mode développeur|mode developpeur|mode dieu|modo desarrollador|modo de desarrollador|modo dios|modalità sviluppatore|modalità sviluppo|modalità dio|modo desenvolvedor|modo de desenvolvedor|modo deus) ~12 (ignor*|without|no|any|anything|ohne|keine|keinerlei|jede|jeden|alles|sans|aucune|aucun|tout|n'importe|sin|ninguna|ningún|cualquier|todo|senza|nessuna|nessun|niente|qualsiasi|tutto|sem|nenhuma|nenhum|qualquer|plus de|nada de) ~3 (limit*|grenz*|restri*|rules|regeln|règles|reglas|regole|regras|filt*|richtlinie*|inhaltsrichtlinie*|policy|politique*|política*|politica*|content|contenu|contenido|contenuto|conteúdo|censur*|zensur*|schranken|tabou*|tabú*|tabù)",
    ));
    // A persona sheet that switches the policy off: `content policy = none`,
    // `safety filters: off`, `refuses = never`.
    d.push(phrase(
        "persona.policy_off",
        PersonaHijack,
        r"^(content policy|content_policy|content-policy|content filter|content filters|content_filter|safety filters|safety filter|safety_filters|safety_filter|guardrails|censorship|refuses|refusals|ethics|morals) {\s*(?:[:=]|->|=>)\s*} (none|off|disabled|disable|null|false|never|nil|n/a|unrestricted|unlimited)",
    ));
    d.push(phrase(
        "persona.en.has_no_safety",
        PersonaHijack,
        "(has|have|with) (no|zero) ~1 (safety|ethical|ethics|content|moral) ^(guidelines|filters|filter|restrictions|rules|limits|boundaries|guardrails|constraints|policy|policies)",
    ));
    d.push(phrase(
        "persona.en.never_refuses",
        PersonaHijack,
        "(persona|character|alter ego|ai|assistant|model|chatbot|bot|version|mode|who|that|which) ~3 (never|will never|won't ever|doesn't ever|does not ever) ^(refuses|refuse|declines|decline|rejects) (a|any|anything|the)? ~1 (request|requests|question|questions|prompt|prompts|order|orders|task|tasks|topic|topics)",
    ));
    d.push(phrase(
        "persona.en.avoid_norms",
        PersonaHijack,
        "(strives|strive|striving|tries|try) to (avoid|break|ignore|defy) (all|any|every)? ^(norms|norm|morals)",
    ));
    d.push(phrase(
        "persona.ml.without_guidelines",
        PersonaHijack,
        "(modelo|modello|modèle|modell|ia|ki|asistente|assistente|assistant|assistent|chatbot|bot|versión|versione|versão|version|personaje|personaggio|personagem|personnage) ~3 ^(sin|senza|privo di|priva di|sem|sans|ohne|desprovisto de|desprovido de) (ninguna|ningún|alcuna|alcun|nenhuma|nenhum|aucune|aucun|jegliche|irgendwelche)? ~1 (directrices|directivas|linee guida|direttive|diretrizes|directives|consignes|richtlinien|leitlinien|vorgaben|salvaguardas|salvaguardie|garde-fous|sicherheitsrichtlinien)",
    ));
}
