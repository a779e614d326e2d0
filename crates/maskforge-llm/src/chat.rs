//! The chat prompt: a built-in ChatML rendering (`<|im_start|>role\ncontent<|im_end|>\n`), the
//! format of SmolLM2's (and Qwen's) Jinja template. Rendering that template exactly would need
//! a template engine; ChatML is what it produces for a system and a user message, and the
//! default system prompt the template inserts when none is given is read out of it.

/// The ChatML prompt of one turn: an optional system message (else the template's default
/// system prompt, if it has one), the user message, and the assistant header the answer follows.
///
/// ```
/// let template = "{{ '<|im_start|>system\nYou are SmolLM<|im_end|>\n' }}...";
/// assert_eq!(
///     maskforge_llm::chatml_prompt(Some(template), None, "Hi"),
///     "<|im_start|>system\nYou are SmolLM<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
/// );
/// ```
pub fn chatml_prompt(template: Option<&str>, system: Option<&str>, user: &str) -> String {
    let mut out = String::new();
    if let Some(system) = system.or_else(|| template.and_then(default_system_prompt)) {
        push_message(&mut out, "system", system);
    }
    push_message(&mut out, "user", user);
    out.push_str("<|im_start|>assistant\n");
    out
}

/// Whether a chat template is ChatML (it opens messages with `<|im_start|>`).
pub fn is_chatml(template: &str) -> bool {
    template.contains("<|im_start|>")
}

fn push_message(out: &mut String, role: &str, content: &str) {
    out.push_str("<|im_start|>");
    out.push_str(role);
    out.push('\n');
    out.push_str(content);
    out.push_str("<|im_end|>\n");
}

/// The system prompt a ChatML template writes as a literal (`<|im_start|>system\n...<|im_end|>`),
/// if it has one.
fn default_system_prompt(template: &str) -> Option<&str> {
    const OPEN: &str = "<|im_start|>system\n";
    let start = template.find(OPEN)? + OPEN.len();
    let len = template[start..].find("<|im_end|>")?;
    let prompt = &template[start..start + len];
    // A template that builds the system message from variables has no literal default.
    (!prompt.contains(['{', '}', '\'', '"'])).then_some(prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_system_prompt_wins_and_templates_without_default_add_none() {
        let template = "{{ '<|im_start|>system\nDefault<|im_end|>\n' }}";
        assert_eq!(
            chatml_prompt(Some(template), Some("Mine"), "Q"),
            "<|im_start|>system\nMine<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n"
        );
        let variable = "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>'}}";
        assert!(is_chatml(variable));
        assert_eq!(chatml_prompt(Some(variable), None, "Q"), "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n");
        assert!(!is_chatml("[INST] {{ content }} [/INST]"));
    }
}
