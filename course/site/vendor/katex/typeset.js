// Typeset the page's maths with KaTeX. Sphinx writes each formula as \( ... \) (inline) or \[ ... \] (display)
// inside an element of class "math" (with an equation number beside it when the formula has one); each such text
// becomes KaTeX's HTML in place. A formula KaTeX cannot read is shown as its TeX, in red, with the reason on hover.
(function () {
  function typeset() {
    document.querySelectorAll(".math").forEach(function (element) {
      element.childNodes.forEach(function (node) {
        var text = node.nodeType === Node.TEXT_NODE ? node.data.trim() : "";
        var display = text.startsWith("\\[") && text.endsWith("\\]");
        if (!display && !(text.startsWith("\\(") && text.endsWith("\\)"))) return;
        var span = document.createElement("span");
        katex.render(text.slice(2, -2), span, { displayMode: display, throwOnError: false, strict: "ignore" });
        element.replaceChild(span, node);
      });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", typeset);
  else typeset();
})();
