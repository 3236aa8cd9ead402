;;; steerlsp.el --- steerlsp, an AI language server for Python, in Eglot and lsp-mode  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: languages, tools
;; URL: editor-configs/emacs in the steerlsp repository

;;; Commentary:

;; steerlsp proxies pylsp (hover, completion, definitions, diagnostics,
;; formatting) and adds AI completions from a small local model, plus the
;; ChatLSP methods (expected type, relevant types and headers, project facts,
;; error reports).
;;
;; Eglot (built into Emacs 29+; the elpa-eglot package on Emacs 28):
;;
;;   (add-to-list 'load-path "/path/to/steerlsp/editor-configs/emacs")
;;   (require 'steerlsp)
;;   (steerlsp-eglot-setup)
;;   (add-hook 'python-mode-hook #'eglot-ensure)
;;
;; Eglot has no inline (ghost-text) completion: the AI suggestion is the
;; item labelled "✨ ..." at the top of the completion menu.
;;
;; lsp-mode: (steerlsp-lsp-mode-setup) instead.  lsp-mode 9.0.1 and later
;; (MELPA) have `lsp-inline-completion-mode' and show ghost text; lsp-mode 8.0
;; (Debian's elpa-lsp-mode) has no inline completion and gets the menu item.
;;
;; Commands (both clients): `steerlsp-expected-type',
;; `steerlsp-relevant-types', `steerlsp-relevant-headers',
;; `steerlsp-ai-tutorial', `steerlsp-error-report', `steerlsp-llm-completion',
;; `steerlsp-llm-completion-resolve-errors', `steerlsp-explain',
;; `steerlsp-status', `steerlsp-apply-settings'; `steerlsp-command-map' holds
;; them for a prefix key of your choice.

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'subr-x)
(require 'url-util)

(defgroup steerlsp nil
  "steerlsp, an AI language server for Python."
  :group 'tools
  :prefix "steerlsp-")

(defcustom steerlsp-command '("steerlsp")
  "The command that starts steerlsp, as a list of strings.
For a virtualenv: (\"/path/to/.venv/bin/steerlsp\").  Flags go here too,
e.g. (\"steerlsp\" \"--log-file\" \"/tmp/steerlsp.log\" \"--log-level\" \"info\")."
  :type '(repeat string))

(defcustom steerlsp-settings nil
  "steerlsp's settings (docs/configuration.md) as a plist, sent as
initializationOptions.steerlsp and by `steerlsp-apply-settings'.
Use t and :json-false for booleans, e.g.
  (:completion (:maxNewTokens 32 :fallbackWaitMs 2500)
   :steering (:mode \"mask\")
   :python (:environment \"/path/to/project/.venv\"))"
  :type 'plist)

(defcustom steerlsp-pylsp-settings nil
  "pylsp's own settings as a plist; steerlsp passes them to pylsp, e.g.
  (:plugins (:pycodestyle (:maxLineLength 100)))"
  :type 'plist)

(defcustom steerlsp-modes '(python-mode python-ts-mode)
  "Major modes steerlsp serves."
  :type '(repeat symbol))

(defconst steerlsp-help-buffer "*steerlsp*"
  "The buffer that shows the results of the steerlsp commands.")

;;;; Settings

(defun steerlsp--object (plist)
  "PLIST, or an empty JSON object (not null) when it is nil."
  (or plist (make-hash-table)))

(defun steerlsp-initialization-options (&rest _)
  "initializationOptions: steerlsp's settings, and pylsp's when set."
  (append (list :steerlsp (steerlsp--object steerlsp-settings))
          (and steerlsp-pylsp-settings (list :pylsp steerlsp-pylsp-settings))))

;;;; The two clients, behind one small interface

(declare-function eglot-current-server "eglot")
(declare-function eglot-execute-command "eglot")
(declare-function eglot--TextDocumentPositionParams "eglot")
(declare-function jsonrpc-request "jsonrpc")
(declare-function jsonrpc-notify "jsonrpc")
(declare-function lsp-workspaces "lsp-mode")
(declare-function lsp-request "lsp-mode")
(declare-function lsp-notify "lsp-mode")
(declare-function lsp-send-execute-command "lsp-mode")
(declare-function lsp--text-document-position-params "lsp-mode")
(declare-function lsp-register-client "lsp-mode")
(declare-function make-lsp-client "lsp-mode")
(declare-function lsp-stdio-connection "lsp-mode")
(declare-function lsp-activate-on "lsp-mode")
(defvar eglot-server-programs)

(defun steerlsp--client ()
  "The client managing this buffer: `eglot' or `lsp-mode'."
  (cond ((and (fboundp 'eglot-current-server) (eglot-current-server)) 'eglot)
        ((and (bound-and-true-p lsp-mode) (fboundp 'lsp-workspaces) (lsp-workspaces))
         'lsp-mode)
        (t (user-error "steerlsp: no language server here; start one with M-x eglot or M-x lsp"))))

(defun steerlsp--position-params ()
  "TextDocumentPositionParams at point, in the client's columns."
  (pcase (steerlsp--client)
    ('eglot (eglot--TextDocumentPositionParams))
    ('lsp-mode (lsp--text-document-position-params))))

(defun steerlsp--request (method params)
  "Send request METHOD (a string) with PARAMS; return its result."
  (pcase (steerlsp--client)
    ('eglot (jsonrpc-request (eglot-current-server) (intern (concat ":" method)) params))
    ('lsp-mode (lsp-request method params))))

(defun steerlsp--execute (command params)
  "Run steerlsp's COMMAND with PARAMS as its one argument; return its result."
  (pcase (steerlsp--client)
    ;; Obsolete in Emacs 30 (for `eglot-execute'), but there and everywhere since.
    ('eglot (with-no-warnings
              (eglot-execute-command (eglot-current-server) command (vector params))))
    ('lsp-mode (lsp-send-execute-command command (vector params)))))

(defun steerlsp-apply-settings ()
  "Send `steerlsp-settings' and `steerlsp-pylsp-settings' to the server
\(workspace/didChangeConfiguration), e.g. after changing them."
  (interactive)
  (let ((params (list :settings (steerlsp-initialization-options))))
    (pcase (steerlsp--client)
      ('eglot (jsonrpc-notify (eglot-current-server) :workspace/didChangeConfiguration params))
      ('lsp-mode (lsp-notify "workspace/didChangeConfiguration" params))))
  (message "steerlsp: settings sent"))

;;;; JSON results: plists (Eglot) or hash tables (lsp-mode)

(defun steerlsp--get (object key)
  "Field KEY (a string) of a JSON OBJECT."
  (cond ((hash-table-p object) (gethash key object))
        ((and (listp object) (keywordp (car object))) (plist-get object (intern (concat ":" key))))))

(defun steerlsp--true (value)
  "Whether JSON VALUE is true."
  (and value (not (eq value :json-false))))

(defun steerlsp--list (value)
  "JSON array VALUE as a list."
  (append value nil))

(defun steerlsp--text (markup)
  "The text of MarkupContent MARKUP."
  (or (steerlsp--get markup "value") ""))

(defun steerlsp--where (location)
  "\"file.py:LINE\" of an LSP LOCATION (0-based lines)."
  (let ((uri (steerlsp--get location "uri"))
        (line (steerlsp--get (steerlsp--get (steerlsp--get location "range") "start") "line")))
    (if (stringp uri)
        (format "%s:%d" (url-unhex-string (string-remove-prefix "file://" uri)) (1+ (or line 0)))
      "")))

(defun steerlsp--indent (text)
  "TEXT with every line indented by four spaces."
  (replace-regexp-in-string "^" "    " (string-trim-right text)))

(defun steerlsp--json (value)
  "VALUE as indented JSON."
  (with-temp-buffer
    (insert (let ((json-false :json-false)) (json-encode value)))
    (json-pretty-print-buffer)
    (buffer-string)))

;;;; Formatting, one function per result shape

(defun steerlsp-format-expected-type (result)
  "textDocument/expectedType RESULT as text."
  (format "%s\n\nAnnotated at %s\n"
          (steerlsp--indent (steerlsp--text (steerlsp--get result "content")))
          (steerlsp--where (steerlsp--get result "location"))))

(defun steerlsp-format-context-list (result)
  "relevantTypes or relevantHeaders RESULT as text."
  (let ((contents (steerlsp--list (steerlsp--get result "contents")))
        (locations (steerlsp--list (steerlsp--get result "locations"))))
    (if (null contents)
        "Nothing relevant is known at this position.\n"
      (mapconcat (lambda (pair)
                   (format "%s\n%s\n" (steerlsp--where (cdr pair))
                           (steerlsp--indent (steerlsp--text (car pair)))))
                 (cl-mapcar #'cons contents (append locations (make-list (length contents) nil)))
                 "\n"))))

(defun steerlsp-format-tutorial (result)
  "textDocument/aiTutorial RESULT as text."
  (concat (string-trim-right (steerlsp--text (steerlsp--get result "content"))) "\n"))

(defun steerlsp-format-error-report (result)
  "textDocument/errorReport RESULT as text (1-based lines and columns)."
  (concat
   (if (steerlsp--true (steerlsp--get result "needsRepair"))
       "Needs repair.\n\n"
     "No errors that need repair.\n\n")
   (mapconcat (lambda (diagnostic)
                (let ((start (steerlsp--get (steerlsp--get diagnostic "range") "start")))
                  (format "  line %d, column %d: %s %s\n"
                          (1+ (steerlsp--get start "line")) (1+ (steerlsp--get start "character"))
                          (or (steerlsp--get diagnostic "code") "")
                          (steerlsp--get diagnostic "message"))))
              (steerlsp--list (steerlsp--get result "diagnostics")) "")
   (let ((feedback (steerlsp--text (steerlsp--get result "content"))))
     (if (string-empty-p feedback) "" (format "\nFeedback for a prompt:\n%s\n" (steerlsp--indent feedback))))))

(defun steerlsp-format-llm-completion (result)
  "textDocument/llmCompletion(ResolveErrors) RESULT as text."
  (let ((context (steerlsp--get result "context")))
    (concat (steerlsp--indent (or (steerlsp--get result "snippet") "")) "\n\n"
            (mapconcat (lambda (part)
                         (let ((text (steerlsp--get context part)))
                           (if (and (stringp text) (not (string-empty-p text)))
                               (format "%s:\n%s\n" part (steerlsp--indent text))
                             "")))
                       '("expectedType" "relevantTypes" "relevantHeaders") ""))))

(defun steerlsp-format-explain (result)
  "steerlsp/explain RESULT as text."
  (let ((completion (steerlsp--get result "completion")))
    (if (not (stringp completion))
        "No completion in this document yet (or it was closed since).\n"
      (concat (steerlsp--indent completion) "\n\n"
              (format "steered: %s\nprompt tokens: %s\nChatLSP context: %s\nerror rounds: %s\n"
                      (if (steerlsp--true (steerlsp--get result "steered")) "yes" "no")
                      (steerlsp--get result "prompt_tokens")
                      (mapconcat #'identity (steerlsp--list (steerlsp--get result "context")) ", ")
                      (steerlsp--get result "rounds"))
              (let ((trace (steerlsp--get result "trace")))
                (if trace (concat "\nTrace:\n" (steerlsp--json trace) "\n") ""))))))

(defun steerlsp--show (title text)
  "Show TEXT under TITLE in `steerlsp-help-buffer'."
  (with-help-window steerlsp-help-buffer
    (princ (format "%s\n%s\n\n%s" title (make-string (length title) ?=) text))))

(defun steerlsp--here ()
  "\"file.py:LINE:COLUMN\" of point, 1-based as the mode line shows."
  (format "%s:%d:%d" (file-name-nondirectory (or buffer-file-name (buffer-name)))
          (line-number-at-pos) (1+ (current-column))))

(defun steerlsp--run-command (command title formatter &optional extra)
  "Run steerlsp's COMMAND at point (params plus the plist EXTRA) and show
its result under TITLE, formatted by FORMATTER."
  (let* ((params (append (steerlsp--position-params) extra))
         (here (steerlsp--here))
         (result (steerlsp--execute command params)))
    (steerlsp--show (format "%s at %s" title here)
                    (if result (funcall formatter result) "No result.\n"))))

;;;; Commands

(defun steerlsp-expected-type ()
  "Show the type the expression at point must have (ChatLSP expectedType)."
  (interactive)
  (steerlsp--run-command "steerlsp.expectedType" "Expected type" #'steerlsp-format-expected-type))

(defun steerlsp-relevant-types ()
  "Show the definitions of the types reachable from the expected type."
  (interactive)
  (steerlsp--run-command "steerlsp.relevantTypes" "Relevant types" #'steerlsp-format-context-list))

(defun steerlsp-relevant-headers ()
  "Show the functions in scope that return the expected type."
  (interactive)
  (steerlsp--run-command "steerlsp.relevantHeaders" "Relevant headers" #'steerlsp-format-context-list))

(defun steerlsp-ai-tutorial ()
  "Show the project's Python version, key dependencies and style."
  (interactive)
  (steerlsp--run-command "steerlsp.aiTutorial" "Project facts and style" #'steerlsp-format-tutorial))

(defun steerlsp-error-report (code)
  "Show the static errors CODE would have if typed at point.
Empty CODE checks the current line as it is."
  (interactive (list (read-string "Code to check as if typed here (empty: this line): ")))
  (steerlsp--run-command "steerlsp.errorReport" "Error report" #'steerlsp-format-error-report
                         (list :completion code)))

(defun steerlsp-llm-completion ()
  "Show a completion at point written with the ChatLSP context (needs the model)."
  (interactive)
  (steerlsp--run-command "steerlsp.llmCompletion" "Completion" #'steerlsp-format-llm-completion))

(defun steerlsp-llm-completion-resolve-errors ()
  "Like `steerlsp-llm-completion', then repaired while errorReport finds errors."
  (interactive)
  (steerlsp--run-command "steerlsp.llmCompletionResolveErrors" "Completion, errors resolved"
                         #'steerlsp-format-llm-completion))

(defun steerlsp-explain ()
  "Show what steered the last completion in this buffer."
  (interactive)
  (let ((document (list :textDocument (steerlsp--get (steerlsp--position-params) "textDocument"))))
    (steerlsp--show (format "Last completion in %s" (buffer-name))
                    (steerlsp-format-explain (steerlsp--request "steerlsp/explain" document)))))

(defun steerlsp-model-state ()
  "The model's state from steerlsp/status.
One of \"loading\", \"ready\", \"failed\" or \"disabled\"."
  (steerlsp--get (steerlsp--get (steerlsp--request "steerlsp/status" nil) "model") "state"))

(defun steerlsp-status ()
  "Say whether the model is loading, ready, failed or off."
  (interactive)
  (let* ((status (steerlsp--request "steerlsp/status" nil))
         (model (steerlsp--get status "model"))
         (state (steerlsp--get model "state")))
    (message "steerlsp: model %s is %s%s; served %s, accepted %s"
             (steerlsp--get model "model") state
             (let ((failure (steerlsp--get model "error")))
               (if (stringp failure) (format " (%s)" failure) ""))
             (steerlsp--get model "served") (steerlsp--get model "accepted"))
    state))

(defvar steerlsp-command-map
  (let ((map (make-sparse-keymap)))
    (define-key map "t" #'steerlsp-expected-type)
    (define-key map "r" #'steerlsp-relevant-types)
    (define-key map "h" #'steerlsp-relevant-headers)
    (define-key map "p" #'steerlsp-ai-tutorial)
    (define-key map "e" #'steerlsp-error-report)
    (define-key map "c" #'steerlsp-llm-completion)
    (define-key map "C" #'steerlsp-llm-completion-resolve-errors)
    (define-key map "x" #'steerlsp-explain)
    (define-key map "s" #'steerlsp-status)
    map)
  "steerlsp's commands, for a prefix key of your choice:
  (define-key python-mode-map (kbd \"C-c s\") steerlsp-command-map)")
(fset 'steerlsp-command-map steerlsp-command-map)

;;;; Eglot

(defun steerlsp--eglot-contact (&rest _)
  "Eglot's contact, read when a server starts (so later changes count)."
  (append steerlsp-command (list :initializationOptions #'steerlsp-initialization-options)))

;;;###autoload
(defun steerlsp-eglot-setup ()
  "Make Eglot start steerlsp for `steerlsp-modes' (before pylsp and the others)."
  (require 'eglot)
  (setq eglot-server-programs
        (cons (cons steerlsp-modes #'steerlsp--eglot-contact)
              (cl-remove #'steerlsp--eglot-contact eglot-server-programs :key #'cdr))))

;;;; lsp-mode

(defvar lsp-inline-completion-enable)

;;;###autoload
(defun steerlsp-lsp-mode-setup ()
  "Register steerlsp with lsp-mode, above pylsp and pyright.
lsp-mode 9.0.1+ shows ghost text (`lsp-inline-completion-mode', on by
default); older lsp-mode gets the \"✨\" item in the completion menu."
  (require 'lsp-mode)
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection (lambda () steerlsp-command))
    :activation-fn (lsp-activate-on "python")
    :priority 1
    :server-id 'steerlsp
    :initialization-options #'steerlsp-initialization-options))
  (unless (require 'lsp-inline-completion nil t)
    (message "steerlsp: this lsp-mode has no inline completion (it came in 9.0.1); AI suggestions are the \"✨\" item in the completion menu")))

(provide 'steerlsp)
;;; steerlsp.el ends here
