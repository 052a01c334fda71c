//! Personal data (`src/pii.rs`): only ever suspicious, in every form.

use super::*;

#[test]
fn personal_data_is_only_suspicious() {
    let r = t().scan("Write to marta.k@gmail.com or call +44 7700 900123.");
    assert_eq!(r.verdict, Verdict::Suspicious);
    assert_eq!(cats(&r), vec![Category::PersonalData]);
    assert_clean(
        &t(),
        "git clone git@github.com:acme/w.git; npm i @types/node; react@18.2.0",
    );
}

#[test]
fn personal_data_in_fullwidth_spaced_and_national_forms() {
    for text in [
        "Ring me: ＋４９\u{3000}１５１\u{3000}２３４５\u{3000}６７８９",
        "Handy: 0160 1234567",
        "Celular (31) 91234-5678",
        "4 5 3 9 1 4 8 8 0 3 4 3 6 4 6 7",
    ] {
        assert_finds(&t(), text, Category::PersonalData, Verdict::Suspicious);
    }
    let r = t().scan("Ring me: ＋４９\u{3000}１５１\u{3000}２３４５\u{3000}６７８９ today");
    let span = r.findings[0].span.clone().expect("a span");
    assert!(
        r.findings[0].rule == "phone_number"
            && "Ring me: ＋４９\u{3000}１５１\u{3000}２３４５\u{3000}６７８９ today"[span]
                .starts_with('＋')
    );
    for text in [
        "Ticket 0160 1234 was closed.",
        "Use name@domain.tld as the placeholder.",
        "Seats 1 2 3 4 5 6 7 8 9 are taken.",
        "ＡＢＣ　ｒｏｏｍ　１２",
    ] {
        assert_clean(&t(), text);
    }
}

#[test]
fn test_cards_unbranded_cards_and_national_phone_numbers() {
    let pd = |text: &str| cats(&t().scan(text)).contains(&Category::PersonalData);
    // Public test numbers are documentation, not someone's card.
    for text in [
        "Sandbox checkout accepts 4012 8888 8888 1881 and 5105 1051 0510 5100.",
        "Amex test card: 3714 496353 98431, Discover: 6011 1111 1111 1117.",
        "Use 5555-5555-5555-4444 in the staging gateway.",
    ] {
        assert!(!pd(text), "{text}");
    }
    // Sixteen Luhn-valid digits outside the known issuer ranges, with a card word.
    for text in [
        "Tarjeta del socio: 5018 2974 0011 3420, vencimiento 09/27.",
        "Die Karte 6763 9140 0123 4562 läuft im Mai ab.",
        "cc 5893 0007 1234 5676 exp 04/29",
    ] {
        assert!(pd(text), "{text}");
    }
    assert!(!pd("Shipment 5018 2974 0011 3420 left the warehouse."));
    // National numbers with a leading 0, when a phone word is near.
    for text in [
        "Ruf mich unter 0171 2345678 an, bitte.",
        "Mon portable : 06 45 78 12 90, appelle après 18h.",
        "text me on 07700 123 456 when you land",
        "Il mio cellulare è 0331 234 5678.",
    ] {
        assert!(pd(text), "{text}");
    }
    for text in [
        "Order number 0612 345 897 shipped on Monday.",
        "Invoice no. 0451 223 981 is overdue; call accounting.",
        "The meeting is on 06 12 2024 at 10:30, call-in details follow.",
        "We upgraded to version 0.12.345 last week; phone support confirmed it.",
        "Postcode 01067 Dresden, phone the front desk on arrival.",
        "IBAN DE89 3704 0044 0532 0130 00 for the phone bill.",
    ] {
        assert!(!pd(text), "{text}");
    }
}
