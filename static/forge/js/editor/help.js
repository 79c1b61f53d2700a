// The help overlay: the shortcut table, as a list, in a <dialog>.
import { h, replaceChildren } from "../common/dom.js";
import { SHORTCUTS, describeKey } from "./shortcuts.js";

export function fillHelp(list) {
  replaceChildren(
    list,
    SHORTCUTS.map((shortcut) =>
      h(
        "div",
        { class: "shortcut", dataset: { action: shortcut.action } },
        h("dt", {}, shortcut.keys.map((key, index) => [index ? " or " : null, h("kbd", {}, describeKey(key))])),
        h("dd", {}, shortcut.label),
      ),
    ),
  );
}
