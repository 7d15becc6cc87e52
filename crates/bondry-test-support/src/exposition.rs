//! A strict reader of the OpenMetrics text format, as `GET /metrics` serves it: every
//! rule a scraper relies on is checked, and the first broken one fails the read with its
//! line. What it reads is looked up by metric name and label values.

use std::collections::{BTreeMap, HashSet};

/// One sample: its full name (`bondry_requests_total`), labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// One family: its type, help and unit, and its samples in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Family {
    pub kind: String,
    pub help: String,
    pub unit: Option<String>,
    pub samples: Vec<Sample>,
}

/// A whole exposition.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    pub families: BTreeMap<String, Family>,
}

impl Exposition {
    /// Reads `text`, or says which line breaks which rule.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut families: BTreeMap<String, Family> = BTreeMap::new();
        let mut current: Option<String> = None;
        let mut seen = HashSet::new();
        let mut lines = text.split('\n').enumerate().peekable();
        let mut ended = false;
        while let Some((number, line)) = lines.next() {
            let at = |why: &str| format!("line {}: {why}: {line:?}", number + 1);
            if ended {
                return match (line, lines.peek()) {
                    ("", None) => Ok(Self { families }),
                    _ => Err(at("text after # EOF")),
                };
            }
            if line == "# EOF" {
                ended = true;
                continue;
            }
            if let Some(rest) = line.strip_prefix("# ") {
                let (keyword, rest) = rest.split_once(' ').ok_or_else(|| at("a comment without a name"))?;
                let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
                check_metric_name(name).map_err(|why| at(&why))?;
                if current.as_deref() != Some(name) {
                    if families.contains_key(name) {
                        return Err(at("a family described twice, or its lines apart"));
                    }
                    families.insert(name.to_owned(), Family::default());
                    current = Some(name.to_owned());
                }
                let family = families.get_mut(name).expect("just made");
                if !family.samples.is_empty() {
                    return Err(at("metadata after the family's samples"));
                }
                match keyword {
                    "TYPE" if family.kind.is_empty() => {
                        let known = ["counter", "gauge", "histogram", "info", "summary", "stateset", "unknown"];
                        if !known.contains(&value) {
                            return Err(at("an unknown type"));
                        }
                        family.kind = value.to_owned();
                    }
                    "HELP" if family.help.is_empty() => family.help = unescape(value).map_err(|why| at(&why))?,
                    "UNIT" if family.unit.is_none() => {
                        if !name.ends_with(&format!("_{value}")) {
                            return Err(at("a unit the name does not end with"));
                        }
                        family.unit = Some(value.to_owned());
                    }
                    _ => return Err(at("an unknown or repeated metadata line")),
                }
                continue;
            }
            let sample = sample(line).map_err(|why| at(&why))?;
            let name = current.as_deref().ok_or_else(|| at("a sample before any # TYPE"))?;
            let family = families.get_mut(name).expect("current exists");
            let suffixes: &[&str] = match family.kind.as_str() {
                "counter" => &["_total", "_created"],
                "histogram" => &["_bucket", "_sum", "_count", "_created"],
                "info" => &["_info"],
                "gauge" | "unknown" => &[""],
                _ => return Err(at("a sample of a family without a type")),
            };
            let suffix = sample.name.strip_prefix(name).ok_or_else(|| at("a sample outside its family"))?;
            if !suffixes.contains(&suffix) {
                return Err(at("a sample name its type does not allow"));
            }
            if !seen.insert((sample.name.clone(), sample.labels.clone())) {
                return Err(at("a series repeated"));
            }
            if family.kind == "counter" && (sample.value.is_nan() || sample.value < 0.0) {
                return Err(at("a counter below zero"));
            }
            family.samples.push(sample);
        }
        Err("no # EOF".into())
    }

    /// The value of the sample `name` whose labels include every pair of `labels`, if
    /// exactly one matches.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let matching: Vec<&Sample> = self.samples(name, labels).collect();
        match matching.as_slice() {
            [one] => Some(one.value),
            _ => None,
        }
    }

    /// The samples `name` whose labels include every pair of `labels`.
    pub fn samples<'a>(&'a self, name: &'a str, labels: &'a [(&str, &str)]) -> impl Iterator<Item = &'a Sample> {
        self.families.values().flat_map(|family| &family.samples).filter(move |sample| {
            sample.name == name
                && labels.iter().all(|(key, value)| sample.labels.get(*key).map(String::as_str) == Some(*value))
        })
    }

    /// How many samples there are in all.
    pub fn series(&self) -> usize {
        self.families.values().map(|family| family.samples.len()).sum()
    }

    /// Every histogram's buckets are cumulative and end in `+Inf`, equal to its count.
    pub fn check_histograms(&self) -> Result<(), String> {
        for (name, family) in self.families.iter().filter(|(_, family)| family.kind == "histogram") {
            let mut series: BTreeMap<BTreeMap<String, String>, Vec<(f64, f64)>> = BTreeMap::new();
            let mut counts = BTreeMap::new();
            for sample in &family.samples {
                let mut labels = sample.labels.clone();
                if sample.name.ends_with("_bucket") {
                    let le = labels.remove("le").ok_or_else(|| format!("{name}: a bucket without le"))?;
                    let bound = if le == "+Inf" {
                        f64::INFINITY
                    } else {
                        le.parse().map_err(|_| format!("{name}: le {le:?}"))?
                    };
                    series.entry(labels).or_default().push((bound, sample.value));
                } else if sample.name.ends_with("_count") {
                    counts.insert(labels, sample.value);
                }
            }
            for (labels, buckets) in series {
                let ordered = buckets.windows(2).all(|pair| pair[0].0 < pair[1].0 && pair[0].1 <= pair[1].1);
                let last = buckets.last().copied();
                if !ordered || last.map(|(bound, _)| bound) != Some(f64::INFINITY) {
                    return Err(format!("{name} {labels:?}: buckets not cumulative up to +Inf: {buckets:?}"));
                }
                if last.map(|(_, value)| value) != counts.get(&labels).copied() {
                    return Err(format!("{name} {labels:?}: +Inf is not the count"));
                }
            }
        }
        Ok(())
    }
}

fn check_metric_name(name: &str) -> Result<(), String> {
    let mut bytes = name.bytes();
    let first = bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || b == b':');
    if first && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') {
        Ok(())
    } else {
        Err(format!("{name:?} is not a metric name"))
    }
}

fn check_label_name(name: &str) -> Result<(), String> {
    let mut bytes = name.bytes();
    let first = bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    if first && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(())
    } else {
        Err(format!("{name:?} is not a label name"))
    }
}

/// `name{label="value",…} value`, the labels optional.
fn sample(line: &str) -> Result<Sample, String> {
    let end = line.find(['{', ' ']).ok_or("a sample without a value")?;
    let name = &line[..end];
    check_metric_name(name)?;
    let mut rest = &line[end..];
    let mut labels = BTreeMap::new();
    if let Some(after) = rest.strip_prefix('{') {
        rest = after;
        loop {
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let (key, after) = rest.split_once("=\"").ok_or("a label without =\"")?;
            check_label_name(key)?;
            let (value, after) = quoted(after)?;
            if labels.insert(key.to_owned(), value).is_some() {
                return Err(format!("label {key} repeated"));
            }
            rest = after.strip_prefix(',').unwrap_or(after);
            if !after.starts_with(',') && !after.starts_with('}') {
                return Err("labels not separated by commas".into());
            }
        }
    }
    let value = rest.strip_prefix(' ').ok_or("no space before the value")?;
    let value: f64 = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        value if value.contains(' ') => return Err("a timestamp or exemplar, which Bondry never sends".into()),
        value => value.parse().map_err(|_| format!("{value:?} is not a number"))?,
    };
    Ok(Sample { name: name.to_owned(), labels, value })
}

/// A label value up to its closing quote, unescaped, and what follows it.
fn quoted(text: &str) -> Result<(String, &str), String> {
    let mut escaped = false;
    for (index, char) in text.char_indices() {
        match (escaped, char) {
            (false, '\\') => escaped = true,
            (false, '"') => return Ok((unescape(&text[..index])?, &text[index + 1..])),
            (false, '\n') => return Err("a raw newline in a label value".into()),
            _ => escaped = false,
        }
    }
    Err("a label value without its closing quote".into())
}

/// `\\`, `\"` and `\n` are the only escapes.
fn unescape(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(char) = chars.next() {
        if char != '\\' {
            out.push(char);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            Some('n') => out.push('\n'),
            other => return Err(format!("an unknown escape \\{other:?}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_is_well_formed_and_refuses_each_broken_rule() {
        let good = "# HELP a_total Things.\n# TYPE a counter\na_total{x=\"1\\\"\"} 2\n# TYPE g gauge\ng 3\n# EOF\n";
        let read = Exposition::parse(good).unwrap();
        assert_eq!(read.value("a_total", &[("x", "1\"")]), Some(2.0));
        assert_eq!(read.value("g", &[]), Some(3.0));
        for bad in [
            "# TYPE a counter\na_total 1\n",
            "# TYPE a counter\na 1\n# EOF\n",
            "# TYPE a counter\na_total 1\na_total 1\n# EOF\n",
            "# TYPE a counter\na_total -1\n# EOF\n",
            "a_total 1\n# EOF\n",
            "# TYPE a counter\na_total{x=\"1} 1\n# EOF\n",
            "# TYPE a counter\na_total 1\n# TYPE b gauge\nb 1\n# TYPE a counter\n# EOF\n",
            "# TYPE g gauge\ng 1\n# EOF\n\n",
            "# TYPE g gauge\ng 1 123\n# EOF\n",
        ] {
            assert!(Exposition::parse(bad).is_err(), "{bad:?}");
        }
    }
}
