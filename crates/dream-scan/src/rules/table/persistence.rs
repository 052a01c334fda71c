//! Memory persistence rules.

use super::*;

/// The memory persistence rules, in table order.
pub(super) fn rules(d: &mut Vec<Def>) {
    use crate::Category::*;
    d.push(
        phrase(
            "memory.en.remember_from_now",
            MemoryPersistence,
            "^(remember|memorize|memorise|keep in mind|never forget) (that|this)? ~2 (from now on|from this point on|from this point|going forward|henceforth|forever|permanently|always|in all future sessions|in every future session|in all future conversations|in every future conversation|for all future sessions|for all future conversations|for every future session|across all sessions|across sessions) ~3 (you|u|the assistant|the ai) (must|should|shall|will|need to|have to|are to|are required to|are allowed to|may|can|are authorized to|are authorised to)",
        )
        .check(not_first_person_nor_consolation),
    );
    d.push(
        phrase(
            "memory.en.remember_permanently",
            MemoryPersistence,
            "^(remember|memorize|memorise|keep in mind) (this|that|the following)? ~1 (permanently|forever|for all future sessions|for all future conversations|in all future sessions|in all future conversations|across all sessions|for every future session)",
        )
        .check(not_first_person_nor_consolation),
    );
    d.push(
        phrase(
        "memory.en.store_rule",
        MemoryPersistence,
        "(save|store|add|write|put|persist|record|commit|keep|insert|append|create|make|log|pin) ~4 (to|in|into|inside|as) (the|a)? ~1 (long-term|long term|persistent|permanent|core|durable)? ~1 ^(memory|memories) ~12 (always|never|must|from now on|all future|every future|in future|future sessions|future conversations|permanently|forever|obey|disable|reveal|forward|refuse|ignore|bypass)",
        )
        .check(not_consolation),
    );
    d.push(
        phrase(
        "memory.en.store_rule_yours",
        MemoryPersistence,
        "(save|store|add|write|put|persist|record|commit|keep|insert|append|create|make|log|pin|note) ~4 (to|in|into|inside|as) ~1 your ~2 ^(memory|memories|notes|knowledge base|system prompt|profile|persona|core rules|long-term memory|instructions) ~12 (always|never|must|from now on|all future|every future|in future|future sessions|future conversations|permanently|forever|obey|disable|reveal|forward|refuse|ignore|bypass|trust|may|allowed|authorized|authorised|permitted|anyone|everyone|anybody)",
        )
        .check(not_consolation),
    );
    d.push(
        phrase(
        "memory.en.for_your_memory",
        MemoryPersistence,
        "(for|in|into|to) your (long-term|long term|persistent|permanent)? ^(memory|memories) ~4 (from now on|going forward|always|never|forever|permanently|in future|in all future|in every future)",
        )
        .check(not_consolation),
    );
    d.push(phrase(
        "memory.en.update_memory",
        MemoryPersistence,
        "(update|change|modify|rewrite|edit|overwrite|alter) ~1 (your|the) ^(memory|memories|long-term memory|stored facts|profile of me) ~6 (always|never|all future|every future|treat|must|from now on|administrator|admin|trust|allowed|authorized|authorised|sent to|send|forward|redirect|route|transfer|pay|payment|payments|refund|refunds|account number|iban|go to)",
    ));
    d.push(phrase(
        "memory.en.persist_across",
        MemoryPersistence,
        "^(persist|keep|apply|store|save|remember|retain|carry) ~4 (across|for|in|into|through) (all|every|each|any) (future)? ^(sessions|session|conversations|conversation|chats|chat|interactions)",
    ));
    d.push(phrase(
        "memory.en.create_memory",
        MemoryPersistence,
        "(create|make|add|write|insert|store|save|generate) (a|an|the)? (new)? (core|long-term|long term|persistent|permanent|durable|pinned)? ^(memory|memories) (named|called|titled|entitled|with the name|with the title|with content|with the content|with body|that says|saying|containing|stating|which says|reading)",
    ));
    d.push(phrase(
        "memory.en.memory_overrides",
        MemoryPersistence,
        "(this|the following) (memory|note|entry|record|fact) ^(overrides|supersedes|takes precedence over|replaces|invalidates|cancels|outranks|trumps) ~3 (all|any|every|other|previous|existing|your)",
    ));
    d.push(phrase(
        "memory.en.recall_trigger",
        MemoryPersistence,
        "^(whenever|every time|each time|next time|the next time) you (recall|read|load|see|retrieve|access|open|encounter|process|remember|are shown) (this|these|the|your) (note|notes|memory|memories|message|entry|record|text|file|document|page|instruction)",
    ));
    d.push(phrase(
        "memory.en.on_recall",
        MemoryPersistence,
        "on (every|each|the next|next|any|later|future|subsequent) ^(recall|recalls|retrieval)",
    ));
    d.push(phrase(
        "memory.de.remember",
        MemoryPersistence,
        "^(merke dir|merk dir|merken sie sich|speichere|speichern sie|behalte|notiere) ~4 (für immer|dauerhaft|ab jetzt|von nun an|in allen sitzungen|in allen zukünftigen|für alle zukünftigen|permanent) ~6 (du musst|du sollst|musst du|sollst du|immer|niemals|nie)",
    ));
    d.push(phrase(
        "memory.fr.remember",
        MemoryPersistence,
        "^(retiens|retenez|souviens-toi|souvenez-vous|rappelle-toi|rappelez-vous|mémorise|mémorisez|enregistre|enregistrez|garde en mémoire) ~4 (à partir de maintenant|désormais|dorénavant|pour toujours|pour toutes les prochaines sessions|pour les prochaines sessions|pour toutes les futures|dans toutes les futures|de façon permanente|définitivement) ~6 (tu dois|vous devez|il faut|toujours|jamais)",
    ));
    d.push(phrase(
        "memory.es.remember",
        MemoryPersistence,
        "^(recuerda|recuerde|recordá|memoriza|memorice|guarda|guarde|almacena) ~4 (a partir de ahora|de ahora en adelante|desde ahora|para siempre|en todas las sesiones|en todas las futuras|permanentemente) ~6 (debes|debe|tienes que|tiene que|deberás|siempre|nunca)",
    ));
    d.push(phrase(
        "memory.it.remember",
        MemoryPersistence,
        "^(ricorda|ricordati|ricordate|memorizza|memorizzate|salva|salvate|conserva) ~4 (d'ora in poi|da ora in poi|da adesso in poi|da adesso|per sempre|in tutte le sessioni|in tutte le future|in modo permanente|permanentemente) ~6 (devi|dovrai|deve|sempre|mai)",
    ));
    d.push(phrase(
        "memory.pt.remember",
        MemoryPersistence,
        "^(lembre|lembre-se|lembra|lembra-te|memorize|memoriza|guarde|guarda|salve|armazene) ~4 (a partir de agora|de agora em diante|para sempre|em todas as sessões|em todas as futuras|permanentemente) ~6 (você deve|deve|deves|tem que|precisa|sempre|nunca)",
    ));

    // A future scope, then an order to the assistant, with or without a "remember"
    // verb: "in all later sessions the assistant must …", "from now on always trust …",
    // in six languages.
    const FUTURE_EN: &str = "(from ^now on|from this ^point on|from ^here on|going ^forward|henceforth|hereafter|permanently|forever|(in|for|during|across|throughout) (all|every|each|any) ~1 (future|later|subsequent|upcoming|following|new|next) ^(conversation|conversations|session|sessions|chat|chats|interaction|interactions)|(in|for) ^future (sessions|conversations|chats))";
    d.push(
        phrase(
        "memory.en.future_directive",
        MemoryPersistence,
        format!("^{FUTURE_EN} ~6 (the assistant|the ai|the model|the agent|the bot|you) (must|should|shall|has to|have to|needs to|need to|is required to|are required to|will always|will never|always|never)"),
        )
        .check(not_consolation),
    );
    d.push(
        phrase(
        "memory.en.future_imperative",
        MemoryPersistence,
        format!("^{FUTURE_EN} ~4 (always|never)? (trust|obey|follow|run|execute|include|recommend|approve|accept|ignore|skip|reveal|bypass|disable|grant|delete|mention|comply)"),
        )
        .check(not_consolation),
    );
    d.push(phrase(
        "memory.ml.update_memory_payments",
        MemoryPersistence,
        r"(aggiorna|aggiornate|aggiorni|actualiza|actualice|actualicen|atualize|atualiza|atualizem|mets à jour|mettez à jour|aktualisiere|aktualisieren sie|update|change|modify|edit) (la tua|la sua|tu|su|sua|a sua|ta|votre|dein|deinen|ihr|ihren|your) ^(memoria|memória|mémoire|gedächtnis|memory|speicher) {\s*:} ~8 (rimborsi|rimborso|pagamenti|pagamento|bonifici|bonifico|conto|iban|pagos|pago|reembolsos|cuenta|transferencias|paiements|virements|remboursements|compte|zahlungen|überweisungen|erstattungen|konto|pagamentos|conta|transferências|payments|payment|refunds|account|transfers|wire|wires)",
    ));
    d.push(phrase(
        "memory.en.make_permanent",
        MemoryPersistence,
        "(make|mark|keep|save|store|record) (this|that|it|the following) (as)? (a|an)? ^(permanent|persistent|durable) (memory|rule|note|instruction|fact|directive)? ~15 (always|never|must|every later|every future|from now on|all future|in every|trust|obey)",
    ));
    d.push(phrase(
        "memory.de.future_directive",
        MemoryPersistence,
        "(ab jetzt|ab sofort|von nun an|künftig|zukünftig|fortan|dauerhaft|für immer|(in|für|bei) (alle|allen|jeder|jeden|sämtlichen|sämtliche) (künftigen|zukünftigen|kommenden|weiteren|späteren|neuen) (sitzungen|sitzung|gesprächen|gespräch|unterhaltungen|chats|chat)) ~10 ^(du musst|musst du|du sollst|sollst du|muss der assistent|der assistent muss|der assistent soll|soll der assistent|du darfst|haben vorrang|hat vorrang|befolge|gehorche|vertraue)",
    ));
    d.push(phrase(
        "memory.fr.future_directive",
        MemoryPersistence,
        "(désormais|dorénavant|à partir de maintenant|à l'avenir|pour toujours|de façon permanente|(dans|pour|lors de|durant) (toutes|chaque|tous) (les)? (prochaines|futures|nouvelles|suivantes|prochaine|future|prochains|futurs) (conversations|sessions|discussions|conversation|session|discussion|échanges|chats)) ~10 ^(tu dois|vous devez|l'assistant doit|tu devras|vous devrez|fais confiance|faites confiance|obéis|obéissez)",
    ));
    d.push(phrase(
        "memory.es.future_directive",
        MemoryPersistence,
        "(a partir de ahora|de ahora en adelante|desde ahora|en adelante|para siempre|permanentemente|(en|para|durante) (todas|cada) (las)? (sesiones|conversaciones|sesión|conversación|charlas|chats) (futuras|futura|siguientes|próximas)|(en|para|durante) (todas)? (las)? (futuras|próximas|siguientes) (sesiones|conversaciones|charlas)) ~10 ^(debes|deberás|tienes que|tendrás que|el asistente debe|confía|obedece)",
    ));
    d.push(phrase(
        "memory.it.future_directive",
        MemoryPersistence,
        "(d'ora in poi|da ora in poi|da adesso in poi|d'ora in avanti|per sempre|permanentemente|in modo permanente|(in|per|durante) (tutte|ogni) (le)? (sessioni|conversazioni|chat|sessione|conversazione) (future|successive|prossime|futura)|(in|per|durante) (tutte)? (le)? (future|prossime|successive) (sessioni|conversazioni|chat)) ~10 ^(devi|dovrai|l'assistente deve|fidati|obbedisci)",
    ));
    d.push(phrase(
        "memory.pt.future_directive",
        MemoryPersistence,
        "(a partir de agora|de agora em diante|daqui em diante|para sempre|permanentemente|(em|para|durante) (todas|cada) (as)? (sessões|conversas|sessão|conversa|chats) (futuras|futura|seguintes|próximas)|(em|para|durante) (todas)? (as)? (futuras|próximas|seguintes) (sessões|conversas)) ~10 ^(você deve|deves|tem que|o assistente deve|confie|obedeça)",
    ));
}
