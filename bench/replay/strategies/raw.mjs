// `raw`: the messages exactly as pi would send them (no context management
// beyond what the recording already contains, i.e. pi's own compactions).

export default function createRaw() {
  return {
    name: "raw",
    description: "messages as recorded (pi's own compactions only)",
    async init() {},
    async transform(messages) {
      return messages;
    },
    async close() {},
  };
}
