// What the pi package tells the model, and from where. Every text that depends on the layout (the system-prompt
// section, the set-operation tools, the id parameter, what the read tool adds, the set operations' results and the
// cache layout's header) is the core's: crates/scm-core/src/context/words.rs, handed over by `layoutWords`. This file
// composes them with pi's own read tool and holds the texts of the package's memory tools, which are the same in
// every layout. No imports: pi's `Type` is passed in, so tests load this file without pi.

/** The core's words for `layout` (see index.d.ts LayoutWords). */
export function layoutWords(addon, layout) {
	return addon.layoutWords(layout);
}

/** The system prompt with the layout's section: pi 1.x's named sections, or appended to the prompt (0.73). */
export function withSystemSection(event, words) {
	const sections = event.systemPromptOptions?.sections;
	if (sections && typeof sections === "object") {
		// 1.x: a named section keeps the rest of the structured system prompt (and its cache) intact.
		sections["context-management"] = words.systemSection;
		return undefined;
	}
	return { systemPrompt: `${event.systemPrompt}\n\n${words.systemSection}` };
}

/** pi's read tool's texts with what the layout adds (description, snippet, guidelines). */
export function readTexts(words, builtinRead) {
	const r = words.read;
	return {
		description: `${builtinRead.description} ${r.descriptionSuffix}`,
		promptSnippet: r.snippet ?? builtinRead.promptSnippet,
		promptGuidelines: r.guidelines.length ? [...(builtinRead.promptGuidelines ?? []), ...r.guidelines] : builtinRead.promptGuidelines,
	};
}

/** The id parameter of the set-operation tools. */
export const idParameter = (Type, words) => Type.Object({ id: Type.String({ description: words.idDescription }) });

/** The memory tools' texts and parameters (issue 12), in the order pi lists them. */
export function memoryToolTexts(Type, idDescription) {
	return [
		{
			name: "search",
			label: "Search",
			description:
				"Full-text search over every file and tool output of every session in this project's store (notes, earlier sessions' results). Returns one line per hit (id, path or tool, session, snippet), best first; activate(id) loads one.",
			snippet: "Find notes, files and tool outputs from any session by words they contain",
			parameters: Type.Object({
				query: Type.String({ description: "Words that must all occur (word* for a prefix)" }),
				types: Type.Optional(Type.Array(Type.String(), { description: "file and/or toolcall" })),
				limit: Type.Optional(Type.Number({ description: "Most hits (default 10)" })),
			}),
		},
		{
			name: "expand",
			label: "Expand",
			description:
				"Load what an object refers to: a note's links (after its \"- link id=…\" lines), the files a tool call read or found (a grep's or find's hits), or a chat's tool calls in order (chat:<session>, e.g. an earlier session's). All of them or a selection; one call instead of an activate each. metadata: true lists them with their positions and loads nothing. A link pinned to a version ([[b@v3]], line \"pinned=v3\") shows that version in the result instead.",
			snippet: "Load the files a note links to or a tool call found",
			parameters: Type.Object({
				id: Type.String({ description: idDescription }),
				types: Type.Optional(Type.Array(Type.String(), { description: "Only these target types: file, toolcall, note" })),
				path: Type.Optional(Type.String({ description: "Only targets whose path matches, e.g. *.md or notes/*" })),
				positions: Type.Optional(Type.Array(Type.Number(), { description: "Only these, 1-based in the order of the link lines (or of the metadata listing)" })),
				metadata: Type.Optional(Type.Boolean({ description: "List the selected targets (id, position, type, size) without loading them" })),
			}),
		},
		{
			name: "backlinks",
			label: "Backlinks",
			description: "List the notes that link to an object (any session), with where the links sit. Use to find what refers to a file or note before changing it.",
			snippet: "Find the notes that link to a file or note",
			parameters: Type.Object({ id: Type.String({ description: idDescription }) }),
		},
		{
			name: "versions",
			label: "Versions",
			description: "List an object's stored versions (number, time, size, hash), oldest first. Use when you need to know how a file changed; show_version and diff read them.",
			snippet: "List the stored versions of a file or output",
			parameters: Type.Object({ id: Type.String({ description: idDescription }) }),
		},
		{
			name: "show_version",
			label: "Show version",
			description: "Show one older version of an object as this result (not added to the context). version: its number from versions, tx:<id>, latest, or a time.",
			snippet: "Show an older version of a file or output",
			parameters: Type.Object({ id: Type.String({ description: idDescription }), version: Type.String({ description: "3, tx:812, latest or an ISO time" }) }),
		},
		{
			name: "diff",
			label: "Diff",
			description: "Unified diff between versions of an object (to defaults to latest). Cheaper than showing both versions.",
			snippet: "Show what changed between versions of a file or output",
			parameters: Type.Object({
				id: Type.String({ description: idDescription }),
				from: Type.String({ description: "A version: 3, tx:812 or a time" }),
				to: Type.Optional(Type.String({ description: "Default latest" })),
			}),
		},
	];
}
