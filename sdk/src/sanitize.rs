//! [`sanitize_field_name`]: turn a provider's custom-field name into a
//! parameter name (`cf_*`), the way the reference enrichers do, without its
//! collisions.
//!
//! The reference lower-cased ASCII letters and digits, turned everything
//! else into `_`, collapsed and trimmed the `_`s and prefixed `cf_`, so every
//! non-Latin name became `cf_` and all of them collided. Here Cyrillic is
//! transliterated to Latin first, and any name with a non-ASCII character
//! gets an FNV-1a hash of its exact bytes as a suffix, so distinct names stay
//! distinct. The same suffix is added when the slug would be empty or had to
//! be shortened, the two other ways distinct names could collide.

/// Longest name returned, `cf_` and suffix included.
pub const MAX_FIELD_NAME_LEN: usize = 64;

/// A parameter name for the custom field `name`, matching
/// `^[a-z0-9_]{1,64}$` and starting with `cf_`.
///
/// - `"Story Points"` → `cf_story_points`, `"My Custom Field!"` →
///   `cf_my_custom_field` (as in the reference);
/// - `"Приоритет"` → `cf_prioritet_` + 8 hex digits of FNV-1a 32 over the
///   name's UTF-8 bytes;
/// - a name with nothing to transliterate (CJK, emoji, only punctuation) →
///   `cf_` + the 8 hex digits;
/// - a slug too long for 64 characters is cut and gets the hash too.
///
/// ```
/// use toolhost_sdk::sanitize_field_name;
/// assert_eq!(sanitize_field_name("Story Points"), "cf_story_points");
/// assert!(sanitize_field_name("Приоритет").starts_with("cf_prioritet_"));
/// ```
pub fn sanitize_field_name(name: &str) -> String {
    let mut slug = String::with_capacity(name.len());
    let mut non_ascii = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
            continue;
        }
        if !c.is_ascii() {
            non_ascii = true;
            if let Some(latin) = transliterate(c) {
                slug.push_str(latin);
                continue;
            }
        }
        slug.push('_');
    }
    let mut slug = collapse_underscores(&slug);

    const PREFIX: &str = "cf_";
    const HASH_LEN: usize = 1 + 8; // "_" + 8 hex digits
    let too_long = PREFIX.len() + slug.len() > MAX_FIELD_NAME_LEN;
    let hashed = non_ascii || slug.is_empty() || too_long;
    if hashed {
        slug.truncate(MAX_FIELD_NAME_LEN - PREFIX.len() - HASH_LEN);
        while slug.ends_with('_') {
            slug.pop();
        }
    }

    let mut out = String::with_capacity(MAX_FIELD_NAME_LEN);
    out.push_str(PREFIX);
    out.push_str(&slug);
    if hashed {
        if !slug.is_empty() {
            out.push('_');
        }
        out.push_str(&format!("{:08x}", fnv1a32(name.as_bytes())));
    }
    out
}

/// FNV-1a, 32 bits.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, b| {
        (hash ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// Runs of `_` become one `_`; leading and trailing `_` are dropped.
fn collapse_underscores(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '_' && (out.is_empty() || out.ends_with('_')) {
            continue;
        }
        out.push(c);
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// Latin for a Cyrillic letter (Russian, Ukrainian and Belarusian; loosely
/// the common "passport" romanisation), lower case. `None` for anything else.
fn transliterate(c: char) -> Option<&'static str> {
    let lower = c.to_lowercase().next().unwrap_or(c);
    Some(match lower {
        'а' => "a",
        'б' => "b",
        'в' => "v",
        'г' => "g",
        'д' => "d",
        'е' => "e",
        'ё' => "e",
        'ж' => "zh",
        'з' => "z",
        'и' => "i",
        'й' => "i",
        'к' => "k",
        'л' => "l",
        'м' => "m",
        'н' => "n",
        'о' => "o",
        'п' => "p",
        'р' => "r",
        'с' => "s",
        'т' => "t",
        'у' => "u",
        'ф' => "f",
        'х' => "kh",
        'ц' => "ts",
        'ч' => "ch",
        'ш' => "sh",
        'щ' => "shch",
        'ъ' => "",
        'ы' => "y",
        'ь' => "",
        'э' => "e",
        'ю' => "iu",
        'я' => "ia",
        'і' => "i",
        'ї' => "i",
        'є' => "ie",
        'ґ' => "g",
        'ў' => "u",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn well_formed(s: &str) -> bool {
        !s.is_empty()
            && s.len() <= MAX_FIELD_NAME_LEN
            && s.starts_with("cf_")
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    }

    fn hash_hex(s: &str) -> String {
        format!("{:08x}", fnv1a32(s.as_bytes()))
    }

    #[test]
    fn ascii_names_match_the_reference() {
        assert_eq!(sanitize_field_name("Story Points"), "cf_story_points");
        assert_eq!(sanitize_field_name("My Custom Field!"), "cf_my_custom_field");
        assert_eq!(sanitize_field_name("  --Sprint   #2--  "), "cf_sprint_2");
        assert_eq!(sanitize_field_name("customfield_10016"), "cf_customfield_10016");
    }

    #[test]
    fn fnv1a_known_values() {
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn cyrillic_is_transliterated_and_hashed() {
        let s = sanitize_field_name("Приоритет");
        assert_eq!(s, format!("cf_prioritet_{}", hash_hex("Приоритет")));
        assert!(well_formed(&s));
        assert_eq!(
            sanitize_field_name("Срок исполнения"),
            format!("cf_srok_ispolneniia_{}", hash_hex("Срок исполнения"))
        );
    }

    #[test]
    fn distinct_non_ascii_names_stay_distinct() {
        let names = [
            "Приоритет",
            "приоритет",
            "Приорітет",
            "优先级",
            "截止日期",
            "Priorität",
            "Prioritat",
            "🙂",
            "🙃",
        ];
        let out: Vec<String> = names.iter().map(|n| sanitize_field_name(n)).collect();
        for (i, a) in out.iter().enumerate() {
            assert!(well_formed(a), "{a}");
            for b in &out[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn cjk_is_only_the_hash() {
        assert_eq!(
            sanitize_field_name("优先级"),
            format!("cf_{}", hash_hex("优先级"))
        );
    }

    #[test]
    fn mixed_scripts_keep_the_latin_part() {
        let s = sanitize_field_name("Team 队伍");
        assert_eq!(s, format!("cf_team_{}", hash_hex("Team 队伍")));
    }

    #[test]
    fn empty_and_punctuation_only_names_get_a_hash() {
        assert_eq!(sanitize_field_name(""), "cf_811c9dc5");
        assert!(well_formed(&sanitize_field_name("!!!")));
        assert_ne!(sanitize_field_name("!!!"), sanitize_field_name("???"));
    }

    #[test]
    fn long_names_are_cut_to_64_and_keep_the_hash() {
        let long = "a".repeat(100);
        let s = sanitize_field_name(&long);
        assert_eq!(s.len(), 64);
        assert!(well_formed(&s));
        assert!(s.ends_with(&hash_hex(&long)));
        assert_ne!(s, sanitize_field_name(&"a".repeat(101)));

        let cyr = "Очень длинное название пользовательского поля в трекере задач";
        let s = sanitize_field_name(cyr);
        assert!(well_formed(&s), "{s}");
        assert!(s.ends_with(&hash_hex(cyr)));

        // A name exactly at the limit is kept as is.
        let exact = "b".repeat(61);
        assert_eq!(sanitize_field_name(&exact), format!("cf_{exact}"));
    }
}
