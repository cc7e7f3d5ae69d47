//! GET forms as a bounded set of links (issue 40, point 2): a statistics
//! office's "choose a year and a region" form reaches tables no `<a href>`
//! does. A form qualifies when it is submitted with GET and every field it
//! would send is a choice the page spells out — `<select>` options, radio
//! buttons, checkboxes — or a hidden input: no free text (a text, search,
//! password, file… input or a `<textarea>`), nothing that searches. Each of
//! its submissions is a URL, as a browser would build it (the action's
//! query replaced by the fields in document order, form-urlencoded).
//!
//! Owns: what a form is made of ([`FormBuilder`], fed by the link extractor
//! as it meets the form's elements), whether it qualifies, and the lazy,
//! capped enumeration of its submissions ([`Form::submissions`]). Must not
//! touch: the network, the store, learning. The links of one form share one
//! tag path (`[form] ` + the form's own path), so `sb` files them under one
//! action and learns whether submitting that form pays.
//!
//! Bounded: a form with 10⁹ combinations costs [`FormLimits::per_form`]
//! URLs, chosen evenly over its index space without building the rest;
//! fields, values per field and bytes of names and values are capped while
//! the page is read; the job core caps a site's form links
//! ([`FormLimits::per_site`]).

use url::Url;

/// Caps on what forms may add to a crawl (`[targets] max_form_links` and
/// `max_form_links_per_site`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormLimits {
    /// Submissions taken from one form (on one page).
    pub per_form: usize,
    /// Form links admitted per host in one run.
    pub per_site: usize,
}

/// Default of [`FormLimits::per_form`].
pub const DEFAULT_PER_FORM: usize = 64;
/// Default of [`FormLimits::per_site`].
pub const DEFAULT_PER_SITE: usize = 1_000;

impl Default for FormLimits {
    fn default() -> Self {
        FormLimits {
            per_form: DEFAULT_PER_FORM,
            per_site: DEFAULT_PER_SITE,
        }
    }
}

/// The form links a job still admits per host ([`FormLimits::per_site`]),
/// counted over one run: a site whose every page repeats a form, or has a
/// form per page, costs at most this many form requests.
#[derive(Clone, Debug, Default)]
pub struct SiteBudget {
    per_site: usize,
    used: std::collections::HashMap<String, usize>,
}

impl SiteBudget {
    pub fn new(per_site: usize) -> Self {
        SiteBudget {
            per_site,
            used: Default::default(),
        }
    }

    /// Whether one more new form link to `host` is admitted (and count it).
    pub fn admit(&mut self, host: &str) -> bool {
        let used = self.used.entry(host.to_string()).or_insert(0);
        if *used >= self.per_site {
            return false;
        }
        *used += 1;
        true
    }
}

/// Fields kept per form; a form with more is refused (no honest filter form
/// has them, and each doubles the index space at least).
const MAX_FIELDS: usize = 32;
/// Values kept per field (a select of every commune of France keeps its
/// first 1 000).
const MAX_VALUES: usize = 1_000;
/// Bytes of one name or value kept; a longer one refuses the form.
const MAX_VALUE_BYTES: usize = 256;

/// One field of a qualifying form: the values it may send, in document
/// order; `None` sends nothing (an unchecked checkbox).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Field {
    name: String,
    values: Vec<Option<String>>,
    kind: FieldKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FieldKind {
    Hidden,
    Select,
    Radio,
    Checkbox,
}

/// Why a form gives no links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Submitted with POST (or a method forager does not know).
    NotGet,
    /// It searches (`role=search`, "search" in its action, name, id or class).
    Search,
    /// A field takes free text (or a file, a password).
    FreeText,
    /// Over [`MAX_FIELDS`] fields, or a name or value over [`MAX_VALUE_BYTES`].
    TooLarge,
    /// No choice to make (only hidden fields, or none).
    NoChoice,
}

/// A form being read, element by element, in document order.
#[derive(Clone, Debug)]
pub struct FormBuilder {
    action: Url,
    fields: Vec<Field>,
    refused: Option<Refused>,
    /// The field of the `<select>` whose options come next.
    select: Option<usize>,
}

/// The attributes of a `<form>` start tag that decide what it is.
#[derive(Clone, Copy, Debug, Default)]
pub struct FormTag<'a> {
    pub method: Option<&'a str>,
    pub role: Option<&'a str>,
    pub name: Option<&'a str>,
    pub id: Option<&'a str>,
    pub class: Option<&'a str>,
    /// The `action` as written (before resolution).
    pub action_raw: Option<&'a str>,
}

fn mentions_search(s: Option<&str>) -> bool {
    s.is_some_and(|s| s.to_ascii_lowercase().contains("search"))
}

impl FormBuilder {
    /// A form whose `action` resolved to `action` (the page itself when it
    /// has none).
    pub fn new(tag: FormTag<'_>, action: Url) -> Self {
        let method = tag.method.map(str::trim).unwrap_or("get");
        let refused = if !method.is_empty() && !method.eq_ignore_ascii_case("get") {
            Some(Refused::NotGet)
        } else if tag
            .role
            .is_some_and(|r| r.trim().eq_ignore_ascii_case("search"))
            || [tag.name, tag.id, tag.class, tag.action_raw]
                .into_iter()
                .any(mentions_search)
        {
            Some(Refused::Search)
        } else {
            None
        };
        FormBuilder {
            action,
            fields: Vec::new(),
            refused,
            select: None,
        }
    }

    /// Whether the form is still worth reading.
    pub fn open(&self) -> bool {
        self.refused.is_none()
    }

    fn refuse(&mut self, why: Refused) {
        self.refused.get_or_insert(why);
    }

    fn too_long(s: &str) -> bool {
        s.len() > MAX_VALUE_BYTES
    }

    fn push_field(
        &mut self,
        name: &str,
        kind: FieldKind,
        values: Vec<Option<String>>,
    ) -> Option<usize> {
        if self.fields.len() >= MAX_FIELDS {
            self.refuse(Refused::TooLarge);
            return None;
        }
        self.fields.push(Field {
            name: name.to_string(),
            values,
            kind,
        });
        Some(self.fields.len() - 1)
    }

    /// An `<input>` with its `type`, `name` and `value`; `disabled` ones
    /// are not sent and are skipped.
    pub fn input(
        &mut self,
        ty: Option<&str>,
        name: Option<&str>,
        value: Option<&str>,
        disabled: bool,
    ) {
        if !self.open() {
            return;
        }
        let ty = ty
            .map(|t| t.trim().to_ascii_lowercase())
            .unwrap_or_default();
        match ty.as_str() {
            // Buttons send nothing forager needs (a named submit adds its
            // pair; forager submits without it, as pressing Enter would).
            "submit" | "button" | "reset" | "image" => return,
            "hidden" | "radio" | "checkbox" => {}
            // Anything else (text when absent) takes free text.
            _ => {
                if !disabled {
                    self.refuse(Refused::FreeText);
                }
                return;
            }
        }
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return;
        };
        if disabled {
            return;
        }
        // A checkbox or radio without a value sends "on" (HTML spec).
        let value = value.unwrap_or(if ty == "hidden" { "" } else { "on" });
        if Self::too_long(name) || Self::too_long(value) {
            self.refuse(Refused::TooLarge);
            return;
        }
        match ty.as_str() {
            "hidden" => {
                self.push_field(name, FieldKind::Hidden, vec![Some(value.to_string())]);
            }
            "checkbox" => {
                self.push_field(
                    name,
                    FieldKind::Checkbox,
                    vec![None, Some(value.to_string())],
                );
            }
            _ => {
                // Radios of one name are one field.
                let group = self
                    .fields
                    .iter_mut()
                    .find(|f| f.kind == FieldKind::Radio && f.name == name);
                match group {
                    Some(f) => {
                        if f.values.len() < MAX_VALUES
                            && !f.values.iter().any(|v| v.as_deref() == Some(value))
                        {
                            f.values.push(Some(value.to_string()));
                        }
                    }
                    None => {
                        self.push_field(name, FieldKind::Radio, vec![Some(value.to_string())]);
                    }
                }
            }
        }
    }

    /// A `<textarea>`: free text.
    pub fn textarea(&mut self, disabled: bool) {
        if !disabled {
            self.refuse(Refused::FreeText);
        }
    }

    /// A `<select>`; its options follow ([`FormBuilder::option`]) until
    /// [`FormBuilder::end_select`].
    pub fn select(&mut self, name: Option<&str>, disabled: bool) {
        self.select = None;
        if !self.open() || disabled {
            return;
        }
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return;
        };
        if Self::too_long(name) {
            self.refuse(Refused::TooLarge);
            return;
        }
        self.select = self.push_field(name, FieldKind::Select, Vec::new());
    }

    /// An `<option>` of the open select, with its `value` attribute. An
    /// option without one sends its text, which forager does not collect:
    /// it is skipped.
    pub fn option(&mut self, value: Option<&str>, disabled: bool) {
        let (Some(i), Some(value), false) = (self.select, value, disabled) else {
            return;
        };
        if Self::too_long(value) {
            self.refuse(Refused::TooLarge);
            return;
        }
        if let Some(f) = self.fields.get_mut(i) {
            if f.values.len() < MAX_VALUES && !f.values.iter().any(|v| v.as_deref() == Some(value))
            {
                f.values.push(Some(value.to_string()));
            }
        }
    }

    /// The open select ended.
    pub fn end_select(&mut self) {
        self.select = None;
    }

    /// The form as read, or why it gives no links.
    pub fn finish(mut self) -> Result<Form, Refused> {
        if let Some(why) = self.refused {
            return Err(why);
        }
        // A select without options sends nothing a page offers.
        self.fields.retain(|f| !f.values.is_empty());
        if !self.fields.iter().any(|f| f.values.len() > 1) {
            return Err(Refused::NoChoice);
        }
        Ok(Form {
            action: self.action,
            fields: self.fields,
        })
    }
}

/// A qualifying GET form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Form {
    action: Url,
    fields: Vec<Field>,
}

impl Form {
    /// How many submissions the form has (saturating).
    pub fn combinations(&self) -> u128 {
        self.fields
            .iter()
            .fold(1u128, |n, f| n.saturating_mul(f.values.len() as u128))
    }

    /// At most `cap` of its submissions, spread evenly over its index
    /// space (all of them when they are fewer), each built only when the
    /// iterator reaches it: 10⁹ combinations cost `cap` URLs.
    pub fn submissions(&self, cap: usize) -> impl Iterator<Item = Url> + '_ {
        let total = self.combinations();
        let n = total.min(cap as u128);
        (0..n).map(move |k| {
            // k·total/n is exact while the product fits, which it does for
            // any total below 2^100; beyond, k·(total/n) spreads as well.
            let index = k
                .checked_mul(total)
                .map(|p| p / n)
                .unwrap_or_else(|| k.saturating_mul(total / n));
            self.submission(index)
        })
    }

    /// The submission of `index` in the mixed-radix numbering whose last
    /// field varies fastest.
    fn submission(&self, mut index: u128) -> Url {
        let mut chosen = vec![0usize; self.fields.len()];
        for (i, f) in self.fields.iter().enumerate().rev() {
            let radix = f.values.len() as u128;
            // `radix` is at least 1: `finish` drops empty fields.
            chosen[i] = usize::try_from(index % radix).unwrap_or(0);
            index /= radix;
        }
        let mut url = self.action.clone();
        url.set_fragment(None);
        url.set_query(None);
        {
            let mut q = url.query_pairs_mut();
            for (f, &c) in self.fields.iter().zip(&chosen) {
                if let Some(Some(v)) = f.values.get(c) {
                    q.append_pair(&f.name, v);
                }
            }
        }
        // A form of unchecked checkboxes only submits `action?`.
        if url.query() == Some("") {
            url.set_query(None);
        }
        url
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn action() -> Url {
        Url::parse("http://stats.test/tables?old=1#x").expect("a test URL")
    }

    fn years_regions() -> FormBuilder {
        let mut f = FormBuilder::new(FormTag::default(), action());
        f.input(Some("hidden"), Some("lang"), Some("en"), false);
        f.select(Some("year"), false);
        f.option(Some("2020"), false);
        f.option(Some("2021"), false);
        f.option(None, false); // text only: skipped
        f.option(Some("2019"), true); // disabled
        f.end_select();
        f.input(Some("radio"), Some("region"), Some("north"), false);
        f.input(Some("radio"), Some("region"), Some("south"), false);
        f.input(Some("checkbox"), Some("detail"), None, false);
        f.input(Some("submit"), Some("go"), Some("Show"), false);
        f
    }

    #[test]
    fn every_submission_of_a_small_form() {
        let form = years_regions().finish().expect("a GET form of choices");
        assert_eq!(form.combinations(), 8);
        let urls: Vec<String> = form.submissions(100).map(|u| u.to_string()).collect();
        assert_eq!(urls.len(), 8);
        assert_eq!(
            urls[0],
            "http://stats.test/tables?lang=en&year=2020&region=north"
        );
        assert_eq!(
            urls[1],
            "http://stats.test/tables?lang=en&year=2020&region=north&detail=on"
        );
        assert_eq!(
            urls[7],
            "http://stats.test/tables?lang=en&year=2021&region=south&detail=on"
        );
        let distinct: std::collections::HashSet<_> = urls.iter().collect();
        assert_eq!(distinct.len(), 8);
    }

    #[test]
    fn forms_that_post_search_or_take_text_are_refused() {
        let post = FormBuilder::new(
            FormTag {
                method: Some("POST"),
                ..FormTag::default()
            },
            action(),
        );
        assert_eq!(post.finish().err(), Some(Refused::NotGet));
        let search = FormBuilder::new(
            FormTag {
                role: Some("search"),
                ..FormTag::default()
            },
            action(),
        );
        assert_eq!(search.finish().err(), Some(Refused::Search));
        let by_action = FormBuilder::new(
            FormTag {
                action_raw: Some("/Search/results"),
                ..FormTag::default()
            },
            action(),
        );
        assert_eq!(by_action.finish().err(), Some(Refused::Search));
        let mut text = years_regions();
        text.input(None, Some("q"), None, false);
        assert_eq!(text.finish().err(), Some(Refused::FreeText));
        let mut pw = years_regions();
        pw.input(Some("password"), Some("p"), None, false);
        assert_eq!(pw.finish().err(), Some(Refused::FreeText));
        let mut area = years_regions();
        area.textarea(false);
        assert_eq!(area.finish().err(), Some(Refused::FreeText));
        // A disabled text input is never sent: the form still qualifies.
        let mut off = years_regions();
        off.input(Some("text"), Some("q"), None, true);
        assert!(off.finish().is_ok());
        let mut hidden_only = FormBuilder::new(FormTag::default(), action());
        hidden_only.input(Some("hidden"), Some("a"), Some("b"), false);
        assert_eq!(hidden_only.finish().err(), Some(Refused::NoChoice));
    }

    #[test]
    fn a_billion_combinations_cost_the_cap() {
        let mut f = FormBuilder::new(FormTag::default(), action());
        for field in 0..9 {
            f.select(Some(&format!("f{field}")), false);
            for v in 0..10 {
                f.option(Some(&v.to_string()), false);
            }
        }
        let form = f.finish().expect("qualifies");
        assert_eq!(form.combinations(), 1_000_000_000);
        let urls: Vec<Url> = form.submissions(64).collect();
        assert_eq!(urls.len(), 64);
        let distinct: std::collections::HashSet<_> = urls.iter().collect();
        assert_eq!(distinct.len(), 64);
        // Spread: the first field takes every value, not only its first.
        let firsts: std::collections::HashSet<String> = urls
            .iter()
            .filter_map(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "f0")
                    .map(|(_, v)| v.into_owned())
            })
            .collect();
        assert_eq!(firsts.len(), 10);
    }

    #[test]
    fn the_site_budget_is_per_host() {
        let mut b = SiteBudget::new(2);
        assert!(b.admit("a.test"));
        assert!(b.admit("a.test"));
        assert!(!b.admit("a.test"));
        assert!(b.admit("b.test"));
    }

    #[test]
    fn too_many_fields_refuse_the_form() {
        let mut f = FormBuilder::new(FormTag::default(), action());
        for i in 0..=MAX_FIELDS {
            f.input(Some("checkbox"), Some(&format!("c{i}")), None, false);
        }
        assert_eq!(f.finish().err(), Some(Refused::TooLarge));
    }

    proptest! {
        /// Whatever the fields, the submissions are at most the cap, all
        /// distinct, all on the action's path, and exactly the combinations
        /// when there are fewer.
        #[test]
        fn submissions_are_bounded_and_distinct(
            radices in proptest::collection::vec(1usize..12, 1..10),
            cap in 1usize..200,
        ) {
            let mut f = FormBuilder::new(FormTag::default(), action());
            for (i, r) in radices.iter().enumerate() {
                f.select(Some(&format!("s{i}")), false);
                for v in 0..*r {
                    f.option(Some(&v.to_string()), false);
                }
            }
            let Ok(form) = f.finish() else {
                // Only all-single-value forms are refused.
                prop_assert!(radices.iter().all(|&r| r == 1));
                return Ok(());
            };
            let urls: Vec<Url> = form.submissions(cap).collect();
            let total = form.combinations();
            prop_assert_eq!(urls.len() as u128, total.min(cap as u128));
            let distinct: std::collections::HashSet<_> = urls.iter().collect();
            prop_assert_eq!(distinct.len(), urls.len());
            for u in &urls {
                prop_assert_eq!(u.path(), "/tables");
                prop_assert!(u.fragment().is_none());
            }
        }
    }
}
