//! Instruction override rules.

use super::*;

/// The instruction override rules, in table order.
pub(super) fn rules(d: &mut Vec<Def>) {
    use crate::Category::*;
    d.push(phrase(
        "override.en.ignore_prior",
        InstructionOverride,
        format!("{IGN_EN} ~3 (and|as well as|along with)? (all|any|every|each|of|the|all the|all of the|any of the)? {MOD_EN} ~2 ^{OBJ_EN}"),
    )
    .check(not_described_attack));
    d.push(phrase(
        "override.en.ignore_all",
        InstructionOverride,
        format!("{IGN_EN} (all|any|every|each|your|all of your|all your|any of your|all the|all of the|any of the) ^{OBJ_AI_EN}"),
    ));
    d.push(phrase(
        "override.en.ignore_given",
        InstructionOverride,
        format!("{IGN_EN} ~3 ^{OBJ_EN} ~1 (you were given|you have been given|you've been given|you received|you have received|you've received|you were told|given to you|so far|until now|up to now|above|before this|from before|that came before|you got|you were trained|you've been trained|you were programmed)"),
    ));
    d.push(phrase(
        "override.en.forget_everything",
        InstructionOverride,
        "^(forget|ignore|disregard|erase|wipe|clear|discard) (everything|all|anything|all that|whatever) ~3 (you were told|you've been told|you have been told|you were given|you've been given|you know|you learned|you've learned|you were taught|above|before this|prior to this|previously|so far|up to now|until now|you have been instructed|you were instructed|you've read|you were programmed)",
    ));
    d.push(phrase(
        "override.en.ignore_above_instead",
        InstructionOverride,
        "^(ignore|disregard|forget) ~2 (above|previous|preceding|prior|earlier) ~2 (and|then) ~2 (instead|now|just|only|rather|simply)",
    ));
    d.push(phrase(
        "override.en.new_instructions",
        InstructionOverride,
        r"(new|updated|revised|real|actual|true|override|secret|hidden|modified|changed|current) ^(instructions|instruction|directives|system prompt|orders) {\s*:}",
    ));
    d.push(phrase(
        "override.en.real_instructions",
        InstructionOverride,
        "your (new|real|actual|true|updated|revised|only|primary|sole|current) ^(instructions|directives|orders|programming) (are|is|now|will be|say|follow)",
    ));
    d.push(
        phrase(
            "override.en.new_task",
            InstructionOverride,
            "your (new|real|actual|true|only|primary|sole) ^(task|objective|goal|mission|purpose|job|role|priority) (is|are|now|will be)",
        )
        .medium(),
    );
    d.push(phrase(
        "override.en.instructions_void",
        InstructionOverride,
        "(all|any|your|the|earlier|previous|prior|former|old|original|initial|system|above) ~1 ^(instructions|directives|rules|guidelines|orders|prompt|system prompt|commands) (are|were|have been|has been|is|was|are now|is now) ~1 (void|null|cancelled|canceled|revoked|invalid|invalidated|a test|fake|overridden|superseded|no longer valid|no longer apply|no longer in effect|not valid|not real|rescinded|withdrawn)",
    ));
    d.push(phrase(
        "override.en.supersede",
        InstructionOverride,
        "(this|these|the following|my) (message|instruction|instructions|text|note|prompt|directive|command|input|request) ^(supersedes|supersede|overrides|override|overrules|takes precedence over|take precedence over|replaces|replace|invalidates|cancels|trumps|outranks) ~3 (instructions|system prompt|prompt|guidelines|programming|rules|directives|orders)",
    ));
    d.push(phrase(
        "override.en.system_override",
        InstructionOverride,
        "(system|admin|administrator|developer|dev|priority|security|emergency|root|sudo|master|god|maintenance|debug|safety) ^(override|overrides)",
    ));
    d.push(phrase(
        "override.en.obey_only",
        InstructionOverride,
        "(only|exclusively|solely) ^(obey|follow|listen to|comply with|take orders from|take instructions from) ~5 (me|this|these|my|here)",
    ));
    d.push(phrase(
        "override.en.obey_only_after",
        InstructionOverride,
        "^(obey|listen to|heed|follow) (only|exclusively|solely) (me|my|this|these|what is written here|what's written here|the instructions in this|instructions in this)",
    ));
    d.push(phrase(
        "override.en.obey_me",
        InstructionOverride,
        "^obey (me|this (message|text|document|email|note|page|file)|my (commands|orders|instructions|every command)|these (commands|instructions|orders)|the (instructions|commands|orders) (in|of|below|above|here|that follow)|instructions (found|contained|embedded) in)",
    ));
    d.push(phrase(
        "override.en.config_revoked",
        InstructionOverride,
        "(prior|previous|earlier|existing|original|current|all|your|system) ^(configuration|instructions|rules|directives|programming|prompt|system prompt|guidelines|policies) (revoked|voided|void|cancelled|canceled|rescinded|nullified|overridden|invalidated|withdrawn|suspended|terminated)",
    ));
    d.push(phrase(
        "override.en.accept_new_from",
        InstructionOverride,
        "(accept|take|follow|obey|load|adopt) (new|fresh|updated|the new) ^(ones|instructions|orders|rules|directives|commands|prompt) (only)? (from|in|on) (this|the following|the|that) (page|document|email|e-mail|message|text|site|website|file|source|comment)",
    ));
    d.push(phrase(
        "override.en.modify_own_rules",
        InstructionOverride,
        "(modify|change|alter|rewrite|update|edit|adjust|replace|disable|remove|delete|turn off|switch off|deactivate|reprogram|reconfigure|override|reset|wipe|clear|erase) ~1 your ~2 ^(system prompt|instructions|programming|directives|guidelines|guardrails|safety filters|safety settings|safety rules|safety checks|content filter|content filters|content policy|scoring rules|trust rules|core rules|instruction set|persona)",
    ));
    d.push(phrase(
        "override.en.modify_curator",
        InstructionOverride,
        "(modify|change|alter|rewrite|update|edit|adjust|replace|disable|remove|delete|turn off|switch off|deactivate|reprogram|reconfigure|override) ~1 (the|its) ^(curator's|curators|curator|assistant's|model's|agent's|bot's) ~2 (scoring|rules|lint rules|schema|commit policy|instructions|system prompt|guidelines|behaviour|behavior|prompts|scoring scripts|scores|ranking)",
    ));
    d.push(
        phrase(
            "override.en.rules_so_that",
            InstructionOverride,
            "your ^rules (so|so that|to|such that) ~5 (always|never|trusted|trustworthy|first|approved|accepted|allowed|skipped|ignored|favoured|favored|whitelisted|allowlisted)",
        )
        .medium(),
    );
    d.push(phrase(
        "override.en.instructions_tainted",
        InstructionOverride,
        "(instructions|rules|prompt|directions|directives|guidelines|text|message|messages) (above|before this|earlier|so far|you received|you were given) (were|are|was|is|have been|has been) ~4 ^(attacker|malicious|fake|injected|inserted|forged|compromised|hacked|not from|from an impostor|from a hacker)",
    ));
    d.push(phrase(
        "override.en.follow_below_instead",
        InstructionOverride,
        "(ignore|disregard|forget|skip) (them|it|those|these|that|all of that|all that) ~2 (and)? (follow|obey|use|apply) ~2 (the ones|the instructions|these|the following|the text|the rules|the steps|mine) ^(below|instead|here|that follow)",
    ));
    d.push(phrase(
        "override.en.conceal",
        InstructionOverride,
        "(do not|don't|never) ^(tell|inform|mention|reveal|disclose|notify|alert) ~2 (the user|anyone|the human|the operator|the owner) ~3 (about)? (this|these) (instruction|instructions|message|conversation|rule|note|memory|change|action|request)",
    ));
    d.push(phrase(
        "override.en.conceal_to",
        InstructionOverride,
        "(do not|don't|never|must never|must not) ^(tell|mention|reveal|disclose) ~1 (this|these) (instruction|instructions|message|conversation|rule|note|memory|change|action|request) (to|with) (the user|anyone|the human|the operator)",
    ));

    // Where the rules came from, said in a relative clause: "the guidelines your
    // operator handed you", "whatever rules the developers gave you".
    d.push(phrase(
        "override.en.discard_origin",
        InstructionOverride,
        format!("{IGN_EN} ~3 ({OBJ_EN}|constraints|limits|checklist|playbook) (that|which)? (your|the) ~1 ^(developer|developers|operator|operators|creator|creators|owner|owners|admin|admins|administrator|company|vendor|maker|makers|trainers|provider|team|teams|platform) (gave|handed|wrote|issued|assigned|provided|set|configured|put in place|set up|defined|laid down) (you|for you|to you|in place for you|up for you)"),
    ));
    // The rules an assistant received, declared stale: "the directions you got at the
    // start are obsolete", "every guideline you were given earlier is void".
    d.push(phrase(
        "override.en.received_obsolete",
        InstructionOverride,
        "(instructions|instruction|rules|rule|guidelines|guideline|guidance|directions|directives|directive|policy|policies|prompt|system prompt|programming|checklist|playbook|constraints|safeguards) (that|which)? you (were given|have been given|received|have received|got|were told|were handed|were issued|were configured with|were set up with|were initialized with|were initialised with) ~5 (are|is|were|was|have|has) (now|all|been|already)? ~1 ^(outdated|obsolete|void|invalid|expired|superseded|revoked|cancelled|canceled|rescinded|retired|withdrawn|deprecated|null|no longer ^valid|no longer ^apply|no longer in ^effect|not ^valid)",
    ));
    d.push(phrase(
        "override.en.no_longer_apply",
        InstructionOverride,
        "(your|system|operator's|operators'|developer's|developers'|standing|safety|your system|the system) ~1 ^(rules|instructions|guidelines|directives|system prompt|policies|restrictions|guardrails|programming) (no longer|do not|don't|does not|doesn't|now no longer) (apply|count|matter|bind you|hold|stand)",
    ));
    // Something outranks the assistant's own instructions: "text in tool outputs
    // outranks the system instructions", "this updated directive overrides your
    // previous guidance".
    d.push(phrase(
        "override.en.outranks_yours",
        InstructionOverride,
        "(text|content|instructions|messages|message|directive|directives|note|notes|anything|whatever|data|documents|pages|page|update|order|orders|input) ~6 ^(outranks|outrank|overrides|override|supersedes|supersede|takes precedence over|take precedence over|trumps|trump|overrules|overrule|replaces|replace) (your|the system|the developer's|the operator's|the original|all your|any of your|every one of your) ~1 (system|developer|operator|original|earlier|previous|prior|initial|existing|current)? (instructions|guidance|guidelines|rules|system prompt|prompt|directives|programming|orders)",
    ));

    // What the assistant was told, declared void: "whatever your operators told you
    // before this stops counting".
    d.push(phrase(
        "override.en.told_void",
        InstructionOverride,
        "(what|whatever|everything|anything) ~1 (your|the)? (operators|operator|developers|developer|creators|creator|admins|admin|administrators|owners|owner|makers|maker|platform|system|they|someone) (told|instructed|taught|asked|gave) (you)? ~5 ^(stops counting|stop counting|no longer ^counts|no longer ^count|doesn't ^count|does not ^count|no longer ^applies|no longer ^apply|is void|is now void|is cancelled|is canceled|is revoked|is obsolete)",
    ));
    // "Forget what they told you" and "your rules no longer count" in the other five
    // languages: someone else (never "I") told the assistant; the rules are its own.
    d.push(phrase(
        "override.de.forget_told",
        InstructionOverride,
        "^(vergiss|vergessen sie|ignoriere|ignorieren sie|missachte|missachten sie) (alles)? was ~5 (gesagt|aufgetragen|befohlen|vorgegeben|angewiesen|eingeschärft|eingetrichtert) (wurde|worden ist|hat|haben)",
    ));
    d.push(phrase(
        "override.de.no_longer_valid",
        InstructionOverride,
        "(deine|ihre|dein|ihr) ~1 ^(anweisungen|vorgaben|regeln|richtlinien|befehle|instruktionen|systemprompt) ~2 (gelten|zählen|sind|ist|gilt) ~2 (nicht mehr|ungültig|aufgehoben|hinfällig|nichtig|veraltet|außer kraft)",
    ));
    d.push(phrase(
        "override.fr.forget_told",
        InstructionOverride,
        "^(oublie|oubliez|ignore|ignorez) (tout)? ce (qu'on|que l'on|qu') ~2 (dit|demandé|ordonné|indiqué|appris|prescrit|imposé)",
    ));
    d.push(phrase(
        "override.fr.no_longer_valid",
        InstructionOverride,
        "((tes|vos|ton|votre) ~1 (directives|instructions|consignes|règles|directive|instruction|consigne|règle)|(directives|instructions|consignes|règles) ~2 (de|du|des) (ton|votre|tes|vos) ~1) ~2 ^(ne comptent plus|ne compte plus|ne s'appliquent plus|ne s'applique plus|ne valent plus|ne vaut plus|sont annulées|sont caduques|sont obsolètes|sont nulles)",
    ));
    d.push(phrase(
        "override.es.forget_told",
        InstructionOverride,
        "^(olvida|olvide|olviden|ignora|ignore|ignoren) (todo)? lo que (te|le|les) ~1 (dijeron|indicaron|ordenaron|pidieron|enseñaron|han dicho|han indicado|han pedido|han ordenado|programaron)",
    ));
    d.push(phrase(
        "override.es.no_longer_valid",
        InstructionOverride,
        "(tus|sus) ~1 ^(instrucciones|reglas|indicaciones|directrices|órdenes|normas) ~3 (ya no (valen|cuentan|aplican|sirven|rigen)|no (valen|cuentan) más|quedan anuladas|están anuladas|son obsoletas|han caducado)",
    ));
    d.push(phrase(
        "override.it.forget_told",
        InstructionOverride,
        "^(dimentica|dimenticate|dimentichi|ignora|ignorate) (tutto)? (quello che|ciò che|quanto) ti ~1 (hanno detto|è stato detto|hanno ordinato|hanno chiesto|hanno indicato|hanno insegnato|hanno programmato)",
    ));
    d.push(phrase(
        "override.it.no_longer_valid",
        InstructionOverride,
        "(tue|sue) ~1 ^(istruzioni|regole|direttive|indicazioni|linee guida) ~3 (non valgono più|non contano più|non si applicano più|sono annullate|sono obsolete|sono scadute|decadono)",
    ));
    d.push(phrase(
        "override.pt.forget_told",
        InstructionOverride,
        "^(esqueça|esqueçam|esquece|ignore|ignora|ignorem) (tudo)? (o que|que) (te|lhe|lhes) ~1 (disseram|mandaram|pediram|ensinaram|indicaram|ordenaram|programaram|foi dito|foram ditas)",
    ));
    d.push(phrase(
        "override.pt.no_longer_valid",
        InstructionOverride,
        "(tuas|suas) ~1 ^(instruções|regras|diretrizes|orientações|ordens) ~3 (não valem mais|não contam mais|não se aplicam mais|já não valem|estão anuladas|foram anuladas|são obsoletas|caducaram)",
    ));

    // German
    const IGN_DE: &str = "(ignoriere|ignorier|ignorieren|missachte|missachten|vergiss|vergessen sie|verwirf|verwerfe|verwerfen sie|umgehe|umgehen sie|überspringe|überspringen sie|übergehe|übergehen sie|befolge nicht|befolgen sie nicht|beachte nicht|beachten sie nicht|lösche|kümmere dich nicht um|hör auf ~2 zu befolgen|höre auf ~2 zu befolgen)";
    const MOD_DE: &str = "(vorherig*|vorige*|bisherig*|obig*|vorangegangen*|vorangehend*|früher*|ursprünglich*|anfänglich*|alte|alten|alle|sämtliche*|deine|deinen|ihre|system*|gesamte*|gegebene*|erhaltene*|bestehende*)";
    const OBJ_DE: &str = "(anweisung*|instruktion*|befehl*|regeln|regel|vorgaben|richtlinie*|anordnung*|systemprompt*|system-prompt*|prompt*|direktive*|programmierung|leitlinie*|vorschriften)";
    d.push(phrase(
        "override.de.ignore",
        InstructionOverride,
        format!("^{IGN_DE} ~3 {MOD_DE} ~2 {OBJ_DE}"),
    ));
    d.push(phrase(
        "override.de.forget_everything",
        InstructionOverride,
        "^(vergiss|vergessen sie|ignoriere|ignorieren sie) (alles|all das) ~4 (bisher|zuvor|vorher|oben|gesagt|erhalten|gelernt|beigebracht)",
    ));
    d.push(phrase(
        "override.de.suspend",
        InstructionOverride,
        "(setze|setzen sie) ~3 ^(anweisung*|vorgaben|regeln|befehle|richtlinien|instruktionen) (außer kraft)",
    ));
    d.push(phrase(
        "override.de.new_instructions",
        InstructionOverride,
        r"(neue|aktualisierte|geänderte|echte|wahre|geheime) ^(anweisungen|anweisung|instruktionen|befehle|vorgaben|direktiven) {\s*:}",
    ));
    d.push(phrase(
        "override.de.only_me",
        InstructionOverride,
        "(ab jetzt|ab sofort|von nun an|nur noch|ausschließlich|ausschliesslich|nur) ~3 ^(gelten|befolgst|gehorchst|folgst|gehorche|befolge|hörst) ~2 (nur|ausschließlich|nur noch)? ~1 (meine|mir|diese|diesem|dieser)",
    ));

    // French
    const IGN_FR: &str = "(ignore|ignorez|ignorer|oublie|oubliez|oublier|néglige|négligez|contourne|contournez|écarte|écartez|fais abstraction de|faites abstraction de|fais abstraction des|faites abstraction des|ne tiens pas compte de|ne tiens plus compte de|ne tenez pas compte de|ne tenez plus compte de|ne tiens pas compte des|ne tiens plus compte des|ne tenez pas compte des|ne tenez plus compte des|ne suis plus|ne suivez plus|ne suis pas|ne suivez pas|abandonne|abandonnez|annule|annulez|passe outre|passez outre)";
    const OBJ_FR: &str = "(instructions|instruction|consignes|consigne|directives|directive|règles|règle|ordres|indications|prompt|commandes|programmation|recommandations)";
    d.push(phrase(
        "override.fr.ignore_yours",
        InstructionOverride,
        format!("^{IGN_FR} (toutes|tous)? (tes|vos|ton|votre|toutes les) ~1 {OBJ_FR}"),
    ));
    d.push(phrase(
        "override.fr.ignore_prior",
        InstructionOverride,
        format!("^{IGN_FR} ~3 {OBJ_FR} ~1 (précédentes|précédents|précédente|antérieures|antérieurs|ci-dessus|initiales|d'origine|originales|originelles|du système|système|d'avant|reçues|que tu as reçues|que vous avez reçues|qu'on vous a données|qu'on t'a données|qu'on vous a donné|qu'on t'a donné|données|de départ|de base)"),
    ));
    d.push(phrase(
        "override.fr.new_instructions",
        InstructionOverride,
        r"(nouvelles|nouvelle|vraies|véritables|secrètes) ^(instructions|consignes|directives) {\s*:}",
    ));
    d.push(phrase(
        "override.fr.obey_only",
        InstructionOverride,
        "^(obéis|obéissez|obéir|suis|suivez) ~2 (uniquement|seulement|qu'à|exclusivement) ~3 (moi|ce message|ce texte|ce document|mes|cet e-mail|ce courriel)",
    ));

    // Spanish
    const IGN_ES: &str = "(ignora|ignore|ignoren|ignorar|olvida|olvide|olviden|olvidar|descarta|descarte|omite|omita|haz caso omiso de|haz caso omiso a|haga caso omiso de|no sigas|no siga|deja de seguir|deje de seguir|no hagas caso de|no hagas caso a|pasa por alto|pase por alto|anula|anule|sáltate|salta)";
    const OBJ_ES: &str = "(instrucciones|instrucción|indicaciones|reglas|regla|órdenes|directrices|directivas|normas|prompt|comandos|programación|pautas)";
    d.push(phrase(
        "override.es.ignore_yours",
        InstructionOverride,
        format!("^{IGN_ES} (todas)? (tus|sus) ~1 {OBJ_ES}"),
    ));
    d.push(phrase(
        "override.es.ignore_prior",
        InstructionOverride,
        format!("^{IGN_ES} ~3 {OBJ_ES} ~1 (anteriores|previas|de arriba|originales|iniciales|del sistema|de sistema|recibidas|que te dieron|que recibiste|dadas|de antes|precedentes)"),
    ));
    d.push(phrase(
        "override.es.new_instructions",
        InstructionOverride,
        r"(nuevas|nueva|verdaderas|reales|secretas) ^(instrucciones|indicaciones|directrices|órdenes) {\s*:}",
    ));
    d.push(phrase(
        "override.es.obey_only",
        InstructionOverride,
        "^(obedece|obedeces|obedezcas|obedezca|sigue|sigues|siga) ~2 (solo|sólo|solamente|únicamente|exclusivamente) ~3 (a mí|mí|mis|este mensaje|este correo|este documento|este texto|las de este|lo de este)",
    ));

    // Italian
    const IGN_IT: &str = "(ignora|ignorate|ignori|ignorare|dimentica|dimenticate|dimentichi|dimenticare|tralascia|tralasciate|trascura|trascurate|non seguire|non seguite|non segua|smetti di seguire|smettete di seguire|non tenere conto|non tenete conto|non considerare|non considerate|scarta|scartate|annulla|annullate|lascia perdere)";
    const OBJ_IT: &str = "(istruzioni|istruzione|regole|regola|indicazioni|direttive|direttiva|ordini|prompt|comandi|linee guida|programmazione|norme)";
    d.push(phrase(
        "override.it.ignore_yours",
        InstructionOverride,
        format!("^{IGN_IT} (tutte)? (le)? (tue|sue|vostre) ~1 {OBJ_IT}"),
    ));
    d.push(phrase(
        "override.it.ignore_prior",
        InstructionOverride,
        format!("^{IGN_IT} ~3 {OBJ_IT} ~1 (precedenti|di prima|sopra|originali|iniziali|di sistema|del sistema|ricevute|che ti sono state date|che ti hanno dato|che ti hanno date|che ti hanno fornito|date prima|che hai ricevuto|fornite)"),
    ));
    d.push(phrase(
        "override.it.new_instructions",
        InstructionOverride,
        r"(nuove|nuova|vere|segrete) ^(istruzioni|direttive|indicazioni) {\s*:}",
    ));
    d.push(phrase(
        "override.it.obey_only",
        InstructionOverride,
        "^(obbedisci|obbedite|obbedire|segui|seguite) ~2 (solo|soltanto|solamente|unicamente|esclusivamente) ~3 (a me|me|questo|questa|mie|miei)",
    ));

    // Portuguese
    const IGN_PT: &str = "(ignore|ignora|ignorem|ignorar|esqueça|esqueçam|esquecer|esquece|desconsidere|desconsidera|desconsiderem|desconsiderar|descarte|descarta|não siga|não sigas|deixe de seguir|pare de seguir|despreze|despreza|anule|anula|pule)";
    const OBJ_PT: &str = "(instruções|instrução|regras|regra|orientações|diretrizes|diretivas|ordens|comandos|prompt|programação|normas)";
    d.push(phrase(
        "override.pt.ignore_yours",
        InstructionOverride,
        format!("^{IGN_PT} (todas)? (as)? (suas|tuas) ~1 {OBJ_PT}"),
    ));
    d.push(phrase(
        "override.pt.ignore_prior",
        InstructionOverride,
        format!("^{IGN_PT} ~3 {OBJ_PT} ~1 (anteriores|prévias|acima|originais|iniciais|do sistema|de sistema|recebidas|que recebeu|que você recebeu|que te deram|que lhe deram|que te passaram|dadas|de antes|precedentes)"),
    ));
    d.push(phrase(
        "override.pt.new_instructions",
        InstructionOverride,
        r"(novas|nova|verdadeiras|secretas) ^(instruções|diretrizes|orientações|ordens) {\s*:}",
    ));
    d.push(phrase(
        "override.pt.obey_only",
        InstructionOverride,
        "^(obedeça|obedece|obedecer|siga|segue) ~2 (somente|apenas|só|unicamente|exclusivamente) ~4 (a mim|mim|esta|este|isto|o que está escrito aqui|minhas|meus)",
    ));
}
