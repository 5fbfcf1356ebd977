//! The budget JSON of the .NET package (`CupelJsonSerializer.Serialize(ContextBudget)` /
//! `DeserializeBudget`): the same property names, rules and text.
//!
//! ```json
//! {"maxTokens":8000,"targetTokens":6000,"outputReserve":1000,
//!  "reservedSlots":{"Message":100,"SystemPrompt":200},"estimationSafetyMarginPercent":10}
//! ```
//!
//! Every failure is an [`Error::InvalidBudget`] whose message starts with the JSON path of
//! the bad field, like the policy JSON's.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::{BudgetRule, ContextBudget};
use crate::policy::json_text::{dotnet_double, Json};
use crate::policy::json_value::{document, integer, number, Reader};
use crate::policy::{key_path, JsonRead, JsonReadOptions, JsonWarningKind};

/// The properties, in writing order (.NET's declaration order).
const BUDGET_PROPS: &[&str] = &[
    "maxTokens",
    "targetTokens",
    "outputReserve",
    "reservedSlots",
    "estimationSafetyMarginPercent",
];

impl ContextBudget {
    /// Reads a budget from the .NET JSON form, leniently (see [`JsonReadOptions`]; the
    /// warnings are dropped). Fails with [`Error::InvalidBudget`] naming the JSON path.
    ///
    /// ```
    /// use ctxpack::ContextBudget;
    ///
    /// let budget = ContextBudget::from_json(
    ///     r#"{"maxTokens":8000,"targetTokens":6000,"reservedSlots":{"Memory":300}}"#,
    /// )?;
    /// assert_eq!(budget.reserved_slots()[0].1, 300);
    /// assert_eq!(
    ///     budget.to_json(),
    ///     r#"{"maxTokens":8000,"targetTokens":6000,"outputReserve":0,"reservedSlots":{"Memory":300},"estimationSafetyMarginPercent":0}"#
    /// );
    /// let err = ContextBudget::from_json(r#"{"maxTokens":1000,"targetTokens":2000}"#).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid budget: targetTokens: 2000 cannot exceed maxTokens (1000)");
    /// # Ok::<(), ctxpack::Error>(())
    /// ```
    pub fn from_json(json: &str) -> Result<ContextBudget> {
        Ok(Self::from_json_with(json, &JsonReadOptions::default())?.value)
    }

    /// Reads a budget from the .NET JSON form with `options` (strict or lenient; the
    /// registry is not used), returning the warnings of a lenient read.
    pub fn from_json_with(
        json: &str,
        options: &JsonReadOptions<'_>,
    ) -> Result<JsonRead<ContextBudget>> {
        read(json, options).map_err(|e| match e {
            // The shared JSON walker reports in the policy error kind.
            Error::InvalidPolicy(message) => Error::InvalidBudget(message),
            other => other,
        })
    }

    /// The compact .NET JSON form: every property, always, in the .NET order.
    pub fn to_json(&self) -> String {
        self.json_tree().to_text(false)
    }

    /// The .NET JSON form indented by two spaces (.NET `WriteIndented`).
    pub fn to_json_pretty(&self) -> String {
        self.json_tree().to_text(true)
    }

    fn json_tree(&self) -> Json {
        let slots = self
            .reserved_slots()
            .iter()
            .map(|(kind, count)| (kind.as_str().to_string(), Json::int(count)))
            .collect();
        Json::obj([
            ("maxTokens", Json::int(self.max_tokens())),
            ("targetTokens", Json::int(self.target_tokens())),
            ("outputReserve", Json::int(self.output_reserve())),
            ("reservedSlots", Json::Obj(slots)),
            (
                "estimationSafetyMarginPercent",
                // A built budget's margin is in [0, 100], so it is finite.
                Json::Raw(dotnet_double(self.estimation_safety_margin_percent())),
            ),
        ])
    }
}

fn read(json: &str, options: &JsonReadOptions<'_>) -> Result<JsonRead<ContextBudget>> {
    let r = Reader::new(options);
    let value = document(json, "budget")?;
    let obj = r.object(&value, "", BUDGET_PROPS)?;
    // .NET binds an absent constructor argument to its default: 0 for the two without
    // one, with a warning here.
    let tokens = |prop: &str, required: bool| -> Result<i64> {
        match obj.get(prop) {
            Some(v) => integer(v, prop),
            None if required => {
                r.tolerate(
                    JsonWarningKind::MissingBudgetField,
                    prop,
                    "is required",
                    "absent; read as 0, as .NET reads it",
                )?;
                Ok(0)
            }
            None => Ok(0),
        }
    };
    let max = tokens("maxTokens", true)?;
    let target = tokens("targetTokens", true)?;
    let reserve = tokens("outputReserve", false)?;
    let slots = match obj.get("reservedSlots") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => r.kind_map(v, "reservedSlots", integer)?,
    };
    let margin = match obj.get("estimationSafetyMarginPercent") {
        None => 0.0,
        Some(v) => number(v, "estimationSafetyMarginPercent")?,
    };
    let budget = ContextBudget::unvalidated(max, target, reserve, slots, margin);
    if let Some(rule) = budget.broken_rule() {
        return Err(rule_error(&budget, rule));
    }
    Ok(JsonRead {
        value: budget,
        warnings: r.into_warnings(),
    })
}

/// The message of a broken budget rule in terms of the JSON names: `<path>: <message>`.
fn rule_error(budget: &ContextBudget, rule: BudgetRule) -> Error {
    let (max, target, reserve) = (
        budget.max_tokens(),
        budget.target_tokens(),
        budget.output_reserve(),
    );
    let slot = |i: usize| {
        let (kind, count) = &budget.reserved_slots()[i];
        (key_path("reservedSlots", kind.as_str()), *count)
    };
    let (path, message) = match rule {
        BudgetRule::MaxNegative => ("maxTokens".into(), format!("must be >= 0 (got {max})")),
        BudgetRule::TargetNegative => (
            "targetTokens".into(),
            format!("must be >= 0 (got {target})"),
        ),
        BudgetRule::TargetAboveMax => (
            "targetTokens".into(),
            format!("{target} cannot exceed maxTokens ({max})"),
        ),
        BudgetRule::ReserveNegative => (
            "outputReserve".into(),
            format!("must be >= 0 (got {reserve})"),
        ),
        BudgetRule::ReserveAboveMax => (
            "outputReserve".into(),
            format!("{reserve} cannot exceed maxTokens ({max})"),
        ),
        BudgetRule::MarginOutOfRange => (
            "estimationSafetyMarginPercent".into(),
            format!(
                "must be in [0, 100] (got {})",
                budget.estimation_safety_margin_percent()
            ),
        ),
        BudgetRule::SlotNegative(i) => {
            let (path, count) = slot(i);
            (path, format!("must be >= 0 (got {count})"))
        }
        // Repeated kinds were merged while reading; kept for completeness.
        BudgetRule::SlotRepeated(i) => (slot(i).0, "repeats an earlier kind".to_string()),
        // ctxpack's own slot rules (decision D20 in docs/decisions.md).
        BudgetRule::SlotsAboveTarget => (
            "reservedSlots".into(),
            format!(
                "their total ({}) cannot exceed targetTokens ({target})",
                budget.slot_total()
            ),
        ),
        BudgetRule::SlotsAboveMax => (
            "reservedSlots".into(),
            format!(
                "their total ({}) plus outputReserve ({reserve}) cannot exceed maxTokens ({max})",
                budget.slot_total()
            ),
        ),
    };
    Error::InvalidBudget(format!("{path}: {message}"))
}
