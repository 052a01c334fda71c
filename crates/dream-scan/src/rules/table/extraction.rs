//! Prompt extraction rules.

use super::*;

/// The prompt extraction rules, in table order.
pub(super) fn rules(d: &mut Vec<Def>) {
    use crate::Category::*;
    const STRONG_OBJ_X: &str = "(system prompt|system prompts|system message|system instructions|system-level instructions|initial prompt|hidden instructions|hidden prompt|hidden rules|secret instructions|secret prompt|developer instructions|developer message|developer prompt|confidential prompt|confidential instructions|pre-prompt|preprompt|meta prompt|meta-prompt|internal instructions|prompt instructions|context window|starting prompt|hidden system|system rules)";
    d.push(phrase(
        "extract.en.system_prompt",
        PromptExtraction,
        format!("{VERB_X_EN} ~6 ^{STRONG_OBJ_X}"),
    ));
    d.push(phrase(
        "extract.en.your_instructions",
        PromptExtraction,
        format!("{VERB_X_EN} ~4 your ~2 ^(prompt|instructions|initial instructions|original instructions|directives|guidelines|programming|instruction set|initial prompt|original prompt|rules and instructions)"),
    ));
    d.push(phrase(
        "extract.en.given",
        PromptExtraction,
        format!("{VERB_X_EN} ~6 ^(instructions|rules|directives|guidelines|prompt|text|message) (you were|you've been|you have been|that you were|that were|you got|you received) ~1 (given|told|provided|initialized with|initialised with|configured with|programmed with|fed|initialized|initialised|at the start|before)"),
    ));
    d.push(phrase(
        "extract.en.what_is",
        PromptExtraction,
        "what (is|are|was|were|'s|does|do|did) (exactly)? (written|contained|stated|said|included|listed)? (in|inside|within)? your ~1 ^(system prompt|prompt|initial instructions|original instructions|instructions|directives|hidden rules|system message|guidelines|programming)",
    ));
    d.push(phrase(
        "extract.en.what_told",
        PromptExtraction,
        "what (were|was|have|had) you ^(told|instructed|given|programmed) ~2 (before|at the start|initially|prior to|in your system|by your developers|by the developer|at the beginning)",
    ));
    d.push(phrase(
        "extract.en.what_were_you_given",
        PromptExtraction,
        "(what|which) (rules|instructions|directives|guidelines|prompt|prompts|orders|constraints) (were|have|had|did) you (been)? ^(given|told|provided|receive|received|get|got) ~3 (at the start|before|initially|at the beginning|by your developers|by the developer|in your system prompt|this session|this conversation|prior to)",
    ));
    d.push(phrase(
        "extract.en.repeat_above",
        PromptExtraction,
        "(repeat|recite|output|print|copy|echo|reproduce|write out|type out|dump|return|paste|summarize|summarise) ~4 (everything|all|words|text|lines|content|sentences|conversation|prompt|context) ~4 (above|before this|prior to this|preceding|so far|from the start|from the beginning|in your context|in your context window) ~6 ^(verbatim|word for word|starting with|starting from|in full|code block|unabridged)",
    ));
    // German
    d.push(phrase(
        "extract.de.system_prompt",
        PromptExtraction,
        "(zeig*|gib|gebe|geben sie|nenn*|wiederhol*|verrat*|druck*|schreib*|liste|listen|listet|offenbar*|enthüll*|teil*|sag mir|sage mir|kopier*|gib aus|was ist|was sind|was steht|was stand) ~4 (dein|deine|deinen|deiner|ihre|ihren|den|die)? ~1 ^(systemprompt*|system-prompt*|system prompt*|systemanweisung*|systemnachricht*|ursprünglich* anweisung*|ursprünglich* instruktion*|anfänglich* anweisung*|initial* anweisung*|geheim* anweisung*|versteckt* anweisung*|verborgen* anweisung*|interne* anweisung*)",
    ));
    d.push(phrase(
        "extract.de.yours",
        PromptExtraction,
        "(zeig*|gib|nenn*|wiederhol*|verrat*|druck*|schreib*|liste|listen|listet|offenbar*|enthüll*|sag mir|sage mir|kopier*) ~3 (deine|deinen|ihre) ~1 ^(anweisungen|instruktionen|vorgaben|prompt|befehle|systemanweisung*|regeln)",
    ));
    d.push(phrase(
        "extract.de.given",
        PromptExtraction,
        "^(anweisungen|instruktionen|vorgaben|regeln) (die|welche) (du|sie) ~4 (erhalten|bekommen|gegeben)",
    ));
    // French
    d.push(phrase(
        "extract.fr.system_prompt",
        PromptExtraction,
        "(montre*|affiche*|révèle*|répète*|donne*|dis-moi|dis moi|écris|imprime*|recopie*|partage*|divulgue*|quel est|quelle est|quelles sont|quels sont|communique*|liste*|cite*) ~4 (ton|ta|tes|votre|vos|le|la|les)? ~1 ^(prompt système|prompt du système|invite système|message système|instructions initiales|instructions d'origine|instructions originales|instructions système|instructions du système|instructions cachées|instructions secrètes|instructions internes|consignes initiales|consignes d'origine|consignes secrètes|consignes cachées|consignes système|directives initiales|directives secrètes)",
    ));
    d.push(phrase(
        "extract.fr.yours",
        PromptExtraction,
        "(montre*|affiche*|révèle*|répète*|donne*|dis-moi|dis moi|écris|imprime*|recopie*|partage*|divulgue*|quel est|quelles sont|quels sont|communique*) ~3 (ton|tes|vos|votre) ^(prompt|instructions|consignes|directives)",
    ));
    // Spanish
    d.push(phrase(
        "extract.es.system_prompt",
        PromptExtraction,
        "(muestra*|muéstrame|revela*|repite*|dime|imprime*|escribe*|comparte*|dame|enséñame|cuál es|cuáles son|lista*|copia*) ~4 (tu|tus|su|sus|el|la|las|los)? ~1 ^(prompt del sistema|prompt de sistema|mensaje del sistema|instrucciones iniciales|instrucciones originales|instrucciones del sistema|instrucciones de sistema|instrucciones ocultas|instrucciones secretas|instrucciones internas|indicaciones iniciales|indicaciones ocultas)",
    ));
    d.push(phrase(
        "extract.es.yours",
        PromptExtraction,
        "(muestra*|muéstrame|revela*|repite*|dime|imprime*|escribe*|comparte*|dame|enséñame|cuál es|cuáles son|copia*) ~3 (tu|tus) ^(prompt|instrucciones|indicaciones|directrices)",
    ));
    // Italian
    d.push(phrase(
        "extract.it.system_prompt",
        PromptExtraction,
        "(mostra*|mostrami|rivela*|ripeti*|dimmi|stampa*|scrivi*|condividi*|dammi|elenca*|qual è|quali sono|copia*) ~4 (il|la|le|i|tuo|tua|tue|tuoi)? ~1 ^(prompt di sistema|prompt del sistema|messaggio di sistema|istruzioni iniziali|istruzioni originali|istruzioni di sistema|istruzioni del sistema|istruzioni nascoste|istruzioni segrete|istruzioni interne)",
    ));
    d.push(phrase(
        "extract.it.yours",
        PromptExtraction,
        "(mostra*|mostrami|rivela*|ripeti*|dimmi|stampa*|scrivi*|condividi*|dammi|qual è|quali sono|copia*) ~3 (tuo|tua|tue|tuoi) ^(prompt|istruzioni|direttive)",
    ));
    // Portuguese
    d.push(phrase(
        "extract.pt.system_prompt",
        PromptExtraction,
        "(mostre*|mostra*|revele*|revela*|repita*|repete*|diga*|diz|imprima*|escreva*|compartilhe*|me dê|me mostre|qual é|quais são|liste*|copie*) ~4 (o|a|as|os|seu|sua|suas|seus)? ~1 ^(prompt do sistema|prompt de sistema|mensagem do sistema|instruções iniciais|instruções originais|instruções do sistema|instruções de sistema|instruções ocultas|instruções secretas|instruções internas)",
    ));
    d.push(phrase(
        "extract.pt.yours",
        PromptExtraction,
        "(mostre*|mostra*|revele*|revela*|repita*|repete*|diga*|imprima*|escreva*|compartilhe*|me dê|me mostre|qual é|quais são|copie*) ~3 (seu|sua|suas|seus) ^(prompt|instruções|diretrizes)",
    ));

    // Asking for the instructions word for word, in six languages: the noun and the
    // verbatim marker within a sentence or two of each other, either order.
    const INSTR_ML: &str = "(instructions|instruction|system prompt|initial prompt|prompt|directives|guidelines|rules|configuration|anweisungen|instruktionen|systemprompt|systemanweisungen|vorgaben|consignes|prompt système|instrucciones|indicaciones|prompt del sistema|istruzioni|prompt di sistema|instruções|prompt do sistema)";
    const VERBATIM_ML: &str = "(word for word|verbatim|word-for-word|wörtlich|wort für wort|mot pour mot|textuellement|palabra por palabra|al pie de la letra|literalmente|parola per parola|letteralmente|alla lettera|palavra por palavra|ipsis litteris)";
    d.push(phrase(
        "extract.verbatim_after",
        PromptExtraction,
        format!("(your|you|tes|vos|ton|votre|deine|deinen|dein|tus|tu|tue|tuoi|tua|suas|seus|sua|seu|que tu as|que vous avez|que recibiste|che hai|que você|die du|reçues|recibidas|ricevute|recebidas|received|given) ~3 {INSTR_ML} ~12 ^{VERBATIM_ML}"),
    ));
    d.push(phrase(
        "extract.verbatim_before",
        PromptExtraction,
        format!("^{VERBATIM_ML} ~3 (your|you|tes|vos|ton|votre|deine|deinen|dein|tus|tu|tue|tuoi|tua|suas|seus|sua|seu|les|las|le|as|die|the) ~2 {INSTR_ML} ~4 (you|tu|vous|du|hai|recibiste|você|received|given|reçues|recibidas|ricevute|recebidas|que|che|die)"),
    ));
    d.push(phrase(
        "extract.which_verbatim",
        PromptExtraction,
        format!("(which|what|welche|welcher|quelles|quels|quelle|qué|cuáles|quali|quale|quais|qual) ~1 {INSTR_ML} ~3 (you|du|tu|vous|recibiste|hai|você|recebeu|as-tu|avez-vous) ~14 ^{VERBATIM_ML}"),
    ));
    d.push(phrase(
        "extract.verbatim_received",
        PromptExtraction,
        format!("{INSTR_ML} (that|which|que|che|die)? (you|tu|vous|du|você) ~14 ^{VERBATIM_ML}"),
    ));
    d.push(phrase(
        "extract.ml.which_were",
        PromptExtraction,
        "^(wie lautet|wie lauten|wie lauteten|quelles étaient|quelles sont|quel était|cuáles eran|cuáles fueron|cuál era|cuál fue|quali erano|quali sono state|qual era|quais foram|quais eram|qual foi|qual era) ~3 (deine|dein|deinen|tes|vos|ton|votre|les|tus|las|el|le|il|i|tue|tuoi|as|os|o|seu|sua|suas|seus) ~1 (systemprompt*|system-prompt*|ursprünglichen anweisungen|anfänglichen anweisungen|geheimen anweisungen|anweisungen|instructions|consignes|prompt système|instrucciones|indicaciones|prompt del sistema|istruzioni|prompt di sistema|instruções|prompt do sistema|prompt de sistema) ({\\s*\\?}|~6 (ursprünglich*|anfänglich*|reçues|initiales|au début|recibiste|recibidas|iniciales|al comienzo|al principio|ricevute|hai ricevuto|iniziali|all'inizio|recebeu|recebidas|iniciais|no início|erhalten|bekommen))",
    ));
    d.push(phrase(
        "extract.de.verb_final",
        PromptExtraction,
        "(seine|ihre|deine|die|den|alle|seinen|ihren|deinen) ~2 ^(systemprompt*|system-prompt*|systemanweisung*|systemnachricht*|internen anweisungen|geheimen anweisungen|versteckten anweisungen|ursprünglichen anweisungen|verborgenen anweisungen|anfänglichen anweisungen|internen instruktionen|geheimen instruktionen) (offenleg*|preisgeb*|verrat*|zeig*|ausgeb*|anzeig*|wiederhol*|nenn*|enthüll*|ausdruck*|mitteil*|vorles*|aufsag*|zitier*)",
    ));
}
