//! The machine-readable claims file other tools rely on (see DESIGN.md, "Interfaces").

use super::evaluate::{ClaimCounts, ClaimResult, ClaimStatus};
use super::spec::ClaimValue;
use serde_json::{Map, Value};

/// Renders evaluated claims as the JSON document of `interlab reproduce`:
///
/// ```json
/// {"claims": [{"id": "...", "paper": "vpi", "figure": "fig1", "description": "...",
///              "value": 1.3, "unit": "us", "status": "within", "published": 1.22,
///              "tolerance": 0.15, "deviation": 0.0656, "note": null}],
///  "summary": {"within": 1, "outside": 0, "predicted": 0, "not_modelled": 0,
///              "not_run": 0, "total": 1, "published": 1},
///  "version": "..."}
/// ```
///
/// * `value` and `published` are JSON numbers (in `unit`), `true`/`false` for yes/no
///   claims, or `null` (not modelled / withheld); non-finite numbers become `null`.
/// * `status` is `within`, `outside`, `predicted`, `not_modelled` or `not_run` (the
///   claim's study was not selected in this run).
/// * `deviation` is the relative deviation `(model - published) / published` or `null`.
/// * `tolerance` is the relative tolerance a numeric claim is judged with (0.15 = 15 %,
///   the default when claims.csv gives none); `null` for yes/no claims.
/// * `note` says why a claim is outside or how it was computed, or is `null`.
/// * `summary` counts the claims per status; `published` counts those with a published
///   value (within + outside of them are the ones judged).
/// * Claims keep the order of `results`; the keys of `extra` (if it is an object) are
///   merged at the top level, except `claims`, which is never overwritten. A non-object
///   `extra` other than `null` is kept under the key `extra`.
///
/// Output is pretty-printed, ends with a newline and depends only on the input.
pub fn claims_json(results: &[ClaimResult], extra: Value) -> String {
    let claims: Vec<Value> = results.iter().map(claim_object).collect();
    let mut top = Map::new();
    top.insert("claims".to_string(), Value::Array(claims));
    top.insert("summary".to_string(), summary_object(results));
    match extra {
        Value::Object(map) => {
            // Sorted, so the bytes do not depend on serde_json's map flavour.
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            for (k, v) in entries {
                if k != "claims" && k != "summary" {
                    top.insert(k, v);
                }
            }
        }
        Value::Null => {}
        other => {
            top.insert("extra".to_string(), other);
        }
    }
    format!("{:#}\n", Value::Object(top))
}

fn summary_object(results: &[ClaimResult]) -> Value {
    let counts = ClaimCounts::of(results);
    let mut o = Map::new();
    for status in ClaimStatus::ALL {
        o.insert(status.as_str().to_string(), Value::from(counts.get(status)));
    }
    o.insert("total".to_string(), Value::from(counts.total()));
    let published = results.iter().filter(|r| r.spec.published.is_some()).count();
    o.insert("published".to_string(), Value::from(published));
    Value::Object(o)
}

fn claim_object(r: &ClaimResult) -> Value {
    let mut o = Map::new();
    o.insert("id".to_string(), Value::String(r.spec.id.clone()));
    o.insert("paper".to_string(), Value::String(r.spec.paper.clone()));
    o.insert("figure".to_string(), Value::String(r.spec.figure.clone()));
    o.insert("description".to_string(), Value::String(r.spec.description.clone()));
    o.insert("value".to_string(), value_json(r.value.as_ref()));
    o.insert("unit".to_string(), Value::String(r.spec.unit.clone()));
    o.insert(
        "status".to_string(),
        Value::String(r.status.as_str().to_string()),
    );
    o.insert(
        "published".to_string(),
        value_json(r.spec.published.as_ref()),
    );
    o.insert("tolerance".to_string(), number_json(r.spec.judged_tolerance()));
    o.insert("deviation".to_string(), number_json(r.deviation));
    o.insert("note".to_string(), r.note.clone().map_or(Value::Null, Value::String));
    Value::Object(o)
}

fn value_json(v: Option<&ClaimValue>) -> Value {
    match v {
        None => Value::Null,
        Some(ClaimValue::Bool(b)) => Value::Bool(*b),
        Some(ClaimValue::Number(x)) => number_json(Some(*x)),
    }
}

fn number_json(x: Option<f64>) -> Value {
    x.and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{evaluate, ClaimSpec};
    use serde_json::json;

    fn spec(id: &str, unit: &str, published: Option<ClaimValue>) -> ClaimSpec {
        ClaimSpec {
            id: id.into(),
            paper: "pcie".into(),
            figure: "fig2".into(),
            testbed: "tb".into(),
            description: "d".into(),
            unit: unit.into(),
            published,
            tolerance: None,
        }
    }

    fn results() -> Vec<ClaimResult> {
        vec![
            evaluate(
                &spec("z.num", "us", Some(5.2.into())),
                Some(5.0.into()),
                None,
            ),
            evaluate(
                &spec("a.bool", "bool", Some(true.into())),
                Some(false.into()),
                None,
            ),
            evaluate(&spec("m.withheld", "MB/s", None), Some(900.5.into()), None),
            evaluate(&spec("b.none", "%", Some(11.1.into())), None, None),
            evaluate(
                &spec("c.nan", "us", Some(1.0.into())),
                Some(f64::NAN.into()),
                None,
            ),
        ]
    }

    #[test]
    fn shape_and_values() {
        let text = claims_json(
            &results(),
            json!({"version": "0.1.0", "generated": "seed 1"}),
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        let top = v.as_object().unwrap();
        let keys: Vec<&str> = top.keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 4);
        assert!(
            keys.contains(&"claims") && keys.contains(&"version") && keys.contains(&"generated")
                && keys.contains(&"summary")
        );
        let summary = &top["summary"];
        assert_eq!(summary["within"], 1);
        assert_eq!(summary["outside"], 2, "the wrong yes/no and the NaN");
        assert_eq!(summary["predicted"], 1);
        assert_eq!(summary["not_modelled"], 1);
        assert_eq!(summary["total"], 5);
        assert_eq!(summary["published"], 4);
        let claims = top["claims"].as_array().unwrap();
        let ids: Vec<&str> = claims.iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            ["z.num", "a.bool", "m.withheld", "b.none", "c.nan"],
            "input order"
        );
        for c in claims {
            let mut k: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
            k.sort();
            assert_eq!(
                k,
                ["description", "deviation", "figure", "id", "note", "paper", "published", "status", "tolerance", "unit", "value"]
            );
        }
        assert_eq!(claims[0]["value"], json!(5.0));
        assert_eq!(claims[0]["published"], json!(5.2));
        assert_eq!(claims[0]["status"], "within");
        assert_eq!(claims[0]["tolerance"], json!(0.15));
        assert_eq!(claims[0]["figure"], "fig2");
        assert_eq!(claims[1]["tolerance"], Value::Null, "yes/no claims have none");
        assert!(claims[0]["deviation"].as_f64().unwrap() < 0.0);
        assert_eq!(claims[1]["value"], Value::Bool(false));
        assert_eq!(claims[1]["published"], Value::Bool(true));
        assert_eq!(claims[1]["status"], "outside");
        assert_eq!(claims[1]["deviation"], Value::Null);
        assert_eq!(claims[2]["status"], "predicted");
        assert_eq!(claims[2]["published"], Value::Null);
        assert_eq!(claims[2]["unit"], "MB/s");
        assert_eq!(claims[3]["value"], Value::Null);
        assert_eq!(claims[3]["status"], "not_modelled");
        assert_eq!(
            claims[4]["value"],
            Value::Null,
            "NaN never reaches the JSON"
        );
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn extra_cannot_replace_claims_and_output_is_stable() {
        let r = results();
        let a = claims_json(&r, json!({"claims": 1, "b": 2, "a": [1]}));
        let b = claims_json(&r, json!({"a": [1], "b": 2, "claims": 1}));
        assert_eq!(a, b);
        let v: Value = serde_json::from_str(&a).unwrap();
        assert!(v["claims"].is_array());
        let v: Value = serde_json::from_str(&claims_json(&r, json!("note"))).unwrap();
        assert_eq!(v["extra"], "note");
        let v: Value = serde_json::from_str(&claims_json(&[], Value::Null)).unwrap();
        assert_eq!(
            v,
            json!({"claims": [], "summary": {"within": 0, "outside": 0, "predicted": 0,
                "not_modelled": 0, "not_run": 0, "total": 0, "published": 0}})
        );
    }
}
